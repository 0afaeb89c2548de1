import { type DenoScript, denoScript } from "./deno_script.ts";

/** The network and environment permissions of `deno task serve`, with the network narrowed to loopback. */
export const SERVE_NET_ENV = [
  "--allow-net=127.0.0.1",
  "--allow-env=BRAIN_PORT,BRAIN_PATH,BRAIN_MODEL_URL,BRAIN_MODEL,BRAIN_MODEL_KEY,BRAIN_SERVER_TOKEN,BRAIN_HOST_TOKENS,BRAIN_LEASE_MS,BRAIN_ADVERTISE_URL,BRAIN_JOURNAL,BRAIN_LIMITS,PG*",
];

/** {@linkcode SERVE_NET_ENV} with files narrowed to `.tmp`. */
export const SERVE_PERMISSIONS = [...SERVE_NET_ENV, "--allow-read=.tmp", "--allow-write=.tmp"];

/** The operator token a server process is started with unless `env` says otherwise. */
export const SERVER_TOKEN = "operator-secret";

/** Options of {@linkcode serveScript}. */
export interface ServeOptions {
  /** Its permission flags; {@linkcode SERVE_PERMISSIONS} by default. */
  permissions?: string[];
  /** On top of `BRAIN_SERVER_TOKEN` {@linkcode SERVER_TOKEN}. */
  env?: Record<string, string>;
}

/** Starts `src/host/server/serve.ts` with `args` as a real process, without waiting for it to listen. */
export function serveScript(args: string[], { permissions = SERVE_PERMISSIONS, env = {} }: ServeOptions = {}) {
  return denoScript("src/host/server/serve.ts", args, {
    permissions,
    env: { BRAIN_SERVER_TOKEN: SERVER_TOKEN, ...env },
  });
}

/** A server process that has said where it listens; `await using` stops it (SIGTERM, then SIGKILL if it lingers). */
export interface ServerProcess extends DenoScript {
  /** The URL it printed, `http://127.0.0.1:<port>`. */
  readonly url: string;
}

/**
 * Starts `src/host/server/serve.ts` with `args` and waits for its `Brain listening on <url>` line;
 * fails with that line when it says anything else or exits first.
 *
 * For example:
 *   await using server = await serverProcess(["--port", "0", "--path", `${dir}/brain.kv`]);
 *   await server.kill("SIGKILL");
 */
export async function serverProcess(args: string[], options?: ServeOptions): Promise<ServerProcess> {
  const child = serveScript(args, options);
  try {
    return Object.assign(child, { url: await listeningUrl(child) });
  } catch (error) {
    await child[Symbol.asyncDispose]();
    throw error;
  }
}

/** The URL of the server's `Brain listening on <url>` line, its next line. */
export async function listeningUrl(server: DenoScript): Promise<string> {
  const line = await server.line();
  const url = /^Brain listening on (http:\/\/127\.0\.0\.1:\d+)$/.exec(line ?? "")?.[1];
  if (!url) throw new Error(`the server did not say where it listens; it said ${JSON.stringify(line)}`);
  return url;
}
