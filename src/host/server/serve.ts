/**
 * `deno task serve`: a Brain server on 127.0.0.1. The port comes from `--port`,
 * else `BRAIN_PORT`, else 8787; `--port 0` picks a free one. It prints
 * `Brain listening on URL` once it accepts connections and stops on SIGINT or SIGTERM.
 * With `--path` (or `BRAIN_PATH`) sessions live in that Deno KV file, else in memory;
 * with `--journal postgres://user@host:port/db` (or `BRAIN_JOURNAL`) they live in
 * that PostgreSQL database. Any number of servers may share one database (or one
 * KV file on one machine): each session is owned by one server at a time, each
 * server beats its URL into the journal, a host that opens a session on a server
 * that does not own it is sent to the one that does, and survivors end the calls
 * of a dead server's sessions once its lease lapsed (`--journal PATH` is `--path PATH`).
 * `--lease-ms` (or `BRAIN_LEASE_MS`) sets how long this server's hold on a
 * session lasts unrenewed: another server over the same journal takes its
 * sessions over that long after it died (10000 by default).
 * `--advertise-url URL` (or `BRAIN_ADVERTISE_URL`) is the http(s) or ws(s) URL
 * the other servers send hosts to, when this server is reached at another
 * address than the 127.0.0.1 one it listens on (a proxy, a load balancer, a
 * container's published port); it is the listening URL by default. A URL that
 * is not one exits 2.
 *
 * With `--model-url` (or `BRAIN_MODEL_URL`), the base URL of an OpenAI-compatible
 * API, the server has one model, `default`, that clients name with
 * `sessions.create({ model: "default" })`: `--model` (or `BRAIN_MODEL`) names the
 * model and `BRAIN_MODEL_KEY` (or `--model-key`) is its API key, which never
 * leaves this process and is never journaled. Prefer the variable for the key:
 * command lines are visible to other users.
 *
 * The server admits only hosts it is told about: `BRAIN_SERVER_TOKEN` is the
 * operator credential a client presents (`new Brain({ serverToken })`) to
 * register a new host id, and `--host-tokens FILE` (or `BRAIN_HOST_TOKENS`), a
 * JSON object of host ids to tokens or `sha-256:` token hashes, names hosts
 * admitted without it (the task may read files under `.brain/`). Without either
 * it exits 2.
 *
 * `--limits NAME=N,...` (or `BRAIN_LIMITS`) sets per-host limits over
 * `SERVER_LIMITS`, such as `maxSessionsPerHost=100,maxCallsPerHost=50`; an
 * unknown name or a value that is not a positive integer exits 2.
 *
 * The allow-list for uploaded Components: `--workspaces DIR` holds session
 * workspaces and permits `read` ones (`--filesystem read,write` permits writable
 * ones too), `--net HOST,...` and `--env NAME,...` permit those grants. Component
 * sandboxes are child Deno processes: the server needs `--allow-run` for Deno
 * and write access to the workspaces folder; `--component-cache DIR` sets where
 * transpiled Components are cached (`.brain/components` by default).
 */
import { parseArgs } from "node:util";
import { openAICompatible } from "../../model/openai.ts";
import type { SessionModel } from "../../model/types.ts";
import type { AllowList } from "../../contract/grant.ts";
import { BrainError } from "../../outcome/errors.ts";
import { errorText } from "../../util/error_text.ts";
import { checkHeaderValue } from "../../util/http_headers.ts";
import { readBoundedBytes } from "../../util/read_bounded.ts";
import { isPostgresUrl } from "../../journal/postgres_url.ts";
import { checkNodeUrl } from "../../journal/nodes.ts";
import { serveBrain } from "./server.ts";
import { type ServerLimits, serverLimits } from "./limits.ts";

const OPTIONS = {
  port: { type: "string" },
  path: { type: "string" },
  journal: { type: "string" },
  "lease-ms": { type: "string" },
  "advertise-url": { type: "string" },
  "model-url": { type: "string" },
  model: { type: "string" },
  "model-key": { type: "string" },
  workspaces: { type: "string" },
  filesystem: { type: "string" },
  net: { type: "string" },
  env: { type: "string" },
  "component-cache": { type: "string" },
  "host-tokens": { type: "string" },
  limits: { type: "string" },
} as const;
/** The most bytes of a host tokens file read. */
const MAX_HOST_TOKENS_BYTES = 1024 * 1024;

let values: ReturnType<typeof flags>;
try {
  values = flags();
  await main();
} catch (error) {
  if (!(error instanceof BrainError)) throw error;
  console.error(`brain serve: ${error.message}`);
  Deno.exit(2);
}

/** The command line's flags; an unknown flag, or one without its value, is `invalid_argument`. */
function flags() {
  try {
    return parseArgs({ args: Deno.args, options: OPTIONS }).values;
  } catch (error) {
    throw new BrainError("invalid_argument", (error as Error).message);
  }
}

/** Reads the configuration, starts the server and stops it on SIGINT or SIGTERM. */
async function main(): Promise<void> {
  const raw = values.port ?? Deno.env.get("BRAIN_PORT") ?? "8787";
  const port = /^\d{1,5}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 0 && port <= 65535)) {
    throw new BrainError("invalid_argument", `the port must be an integer from 0 to 65535, got ${raw}`);
  }

  const journal = values.journal ?? Deno.env.get("BRAIN_JOURNAL");
  const url = isPostgresUrl(journal) ? journal : undefined;
  if (journal !== undefined && url === undefined && values.path !== undefined) {
    throw new BrainError("invalid_argument", "give --journal or --path, not both");
  }
  const path = url === undefined ? journal ?? values.path ?? Deno.env.get("BRAIN_PATH") : undefined;
  const folder = path?.includes("/") ? path.slice(0, path.lastIndexOf("/")) : undefined;
  if (folder) {
    try {
      await Deno.mkdir(folder, { recursive: true });
    } catch (error) {
      throw new BrainError("invalid_argument", `cannot create the journal's folder ${folder}: ${errorText(error)}`);
    }
  }
  const serverToken = Deno.env.get("BRAIN_SERVER_TOKEN") || undefined;
  const hostTokens = await readHostTokens(values["host-tokens"] ?? Deno.env.get("BRAIN_HOST_TOKENS"));
  const server = await serveBrain({
    port,
    path,
    url,
    models: configuredModels(),
    serverToken,
    hostTokens,
    advertiseUrl: advertiseUrl(),
    leaseMs: leaseMs(),
    limits: limits(),
    allow: allowList(),
    components: values["component-cache"] ? { cacheDir: values["component-cache"] } : {},
  });
  console.log(`Brain listening on ${server.url}`);
  const stop = async () => {
    await server.shutdown();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

/** The URL the flag or environment advertises to the cluster, checked; the listening URL when neither does. */
function advertiseUrl(): string | undefined {
  const url = values["advertise-url"] ?? Deno.env.get("BRAIN_ADVERTISE_URL");
  if (url === undefined) return undefined;
  try {
    checkNodeUrl(url);
  } catch (error) {
    throw new BrainError(
      "invalid_argument",
      `--advertise-url (or BRAIN_ADVERTISE_URL) must be the http(s) or ws(s) URL hosts reach this server at, ` +
        `got ${JSON.stringify(url)}: ${(error as Error).message}`,
    );
  }
  return url;
}

/** The lease length the flag or environment sets, if any. */
function leaseMs(): number | undefined {
  const raw = values["lease-ms"] ?? Deno.env.get("BRAIN_LEASE_MS");
  if (raw === undefined) return undefined;
  const ms = Number(raw);
  if (!Number.isInteger(ms) || ms <= 0) {
    throw new BrainError("invalid_argument", `--lease-ms must be a positive integer, got ${raw}`);
  }
  return ms;
}

/** The per-host limits the flag or environment sets, checked: `NAME=N` pairs separated by commas. */
function limits(): Partial<ServerLimits> {
  const raw = values.limits ?? Deno.env.get("BRAIN_LIMITS");
  if (raw === undefined) return {};
  const given: Record<string, number> = {};
  for (const pair of raw.split(",").map((entry) => entry.trim()).filter(Boolean)) {
    const [name, value, ...rest] = pair.split("=");
    if (value === undefined || rest.length > 0 || !/^\d+$/.test(value.trim())) {
      throw new BrainError("invalid_argument", `--limits takes NAME=N pairs separated by commas, got ${pair}`);
    }
    given[name.trim()] = Number(value);
  }
  return serverLimits(given);
}

/** The `default` model the flags or environment describe, or none without a model URL. */
function configuredModels(): Record<string, SessionModel> {
  const baseUrl = values["model-url"] ?? Deno.env.get("BRAIN_MODEL_URL");
  if (baseUrl === undefined) return {};
  const model = values.model ?? Deno.env.get("BRAIN_MODEL");
  if (!model) throw new BrainError("invalid_argument", "a model URL needs a model name: --model or BRAIN_MODEL");
  const apiKey = values["model-key"] ?? Deno.env.get("BRAIN_MODEL_KEY");
  if (apiKey !== undefined) checkHeaderValue("--model-key (or BRAIN_MODEL_KEY)", apiKey);
  return {
    default: { provider: openAICompatible({ baseUrl }), model, credentials: apiKey === undefined ? {} : { apiKey } },
  };
}

/** The allow-list the flags describe: nothing without them. */
function allowList(): AllowList {
  const list = (value: string | undefined) => value?.split(",").map((entry) => entry.trim()).filter(Boolean);
  const modes = list(values.filesystem) ?? ["read"];
  for (const mode of modes) {
    if (mode !== "read" && mode !== "write") {
      throw new BrainError("invalid_argument", `--filesystem takes read and write, got ${mode}`);
    }
  }
  return {
    ...(values.workspaces ? { workspaceRoot: values.workspaces, filesystem: modes as ("read" | "write")[] } : {}),
    net: list(values.net) ?? [],
    env: list(values.env) ?? [],
  };
}

/** The host tokens file's JSON object, or none without a file. */
async function readHostTokens(file: string | undefined): Promise<Record<string, string> | undefined> {
  if (file === undefined) return undefined;
  let parsed: unknown;
  try {
    // Only a regular file: opening a FIFO would wait for a writer, and /dev/zero never ends.
    if (!(await Deno.stat(file)).isFile) throw new Error("not a regular file");
    // Reading its readable to the end, or cancelling it past the bound, closes the file.
    const opened = await Deno.open(file);
    const tooLarge = () => new BrainError("invalid_argument", `longer than ${MAX_HOST_TOKENS_BYTES} bytes`);
    parsed = JSON.parse(
      new TextDecoder().decode(await readBoundedBytes(opened.readable, MAX_HOST_TOKENS_BYTES, tooLarge)),
    );
  } catch (error) {
    throw new BrainError("invalid_argument", `cannot read the host tokens file ${file}: ${errorText(error)}`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
    throw new BrainError("invalid_argument", `the host tokens file ${file} must hold a JSON object of id: token`);
  }
  return parsed as Record<string, string>;
}
