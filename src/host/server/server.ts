import { Hono } from "hono";
import { type BrainOptions, EmbeddedBackend } from "../../embedded/embedded.ts";
import type { Journal } from "../../journal/journal.ts";
import { OpenCalls, serveHostSocket } from "./socket_handler.ts";
import { HOST_PATH } from "../protocol.ts";
import { HostRegistry } from "./registry.ts";
import { viewerRoutes } from "../../viewer/viewer.ts";

/** Options for a Brain server: an embedded Brain's, and the operator's viewer credential. */
export interface BrainServerOptions extends BrainOptions {
  /**
   * The operator's secret for the journal viewer at `/viewer/` and its read API
   * (`Authorization: Bearer TOKEN` sees every session). Without it each host
   * sees only its own sessions, with its id and token.
   */
  operatorToken?: string;
}

/** A Brain server: a hono app holding sessions and journals, and the hosts connected to it. */
export interface BrainServer {
  /** The hono app's handler; serve it with `Deno.serve(server.fetch)` or use {@linkcode serveBrain}. */
  readonly fetch: (request: Request) => Response | Promise<Response>;
  /** The journal holding every session of this server. */
  readonly journal: Journal;
  /** Host WebSockets accepted so far, reconnects included. */
  readonly connections: number;
  /** Closes a host's socket from the server's side, as a network failure would; false when it is not connected. */
  dropHost(id: string): boolean;
  /** Closes every host socket, ends every session handle and closes the journal. */
  close(): Promise<void>;
}

/**
 * Builds the Brain server app over a journal opened as `Brain.open` opens one. `GET /v1/host?host=ID` with `Authorization: Bearer TOKEN`
 * upgrades to the host WebSocket; a missing or wrong token gets 401 before anything is dispatched.
 * `options.models` are the models clients name (`sessions.create({ model: "default" })`): their
 * sessions' Agentloops and `ctx.model` calls run here, and providers and credentials stay here.
 * The journal viewer is at `/viewer/`, its read API under `/v1/sessions`.
 */
export async function createBrainServer({ operatorToken, ...options }: BrainServerOptions = {}): Promise<BrainServer> {
  const backend = await EmbeddedBackend.open(options);
  const hosts = new HostRegistry(backend.journal);
  const calls = new OpenCalls();
  const app = new Hono();
  let connections = 0;

  app.get("/v1/health", (c) => c.json({ ok: true }));
  app.get(HOST_PATH, async (c) => {
    const id = c.req.query("host");
    if (!id) return c.json({ error: { code: "invalid_argument", message: "name the host: ?host=ID" } }, 400);
    const token = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1];
    const host = await hosts.register(id, token);
    if (!host) {
      return c.json({ error: { code: "unauthorized", message: `wrong or missing token for host ${id}` } }, 401);
    }
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      return c.json({ error: { code: "protocol_error", message: "expected a WebSocket upgrade" } }, 426);
    }
    const { socket, response } = Deno.upgradeWebSocket(c.req.raw);
    connections++;
    host.attach(socket);
    serveHostSocket({ socket, host, backend, calls });
    return response;
  });
  app.route("/", viewerRoutes(backend.journal, { operatorToken }));

  return {
    fetch: app.fetch,
    journal: backend.journal,
    get connections() {
      return connections;
    },
    dropHost(id) {
      const host = hosts.get(id);
      if (!host?.connected) return false;
      host.drop();
      return true;
    },
    close() {
      hosts.closeAll();
      return backend.close();
    },
  };
}

/** A Brain server listening on a loopback port. */
export interface ServedBrain extends BrainServer {
  /** The base URL clients pass to `new Brain({ url, token })`. */
  readonly url: string;
  /** Stops listening, then closes the server. */
  shutdown(): Promise<void>;
}

/**
 * Serves a Brain on `hostname` (127.0.0.1 by default) and `port` (0 picks a free one),
 * over the Deno KV file at `path` when given (calls it left open end `unknown` first).
 *
 * @example
 * ```ts ignore
 * import { Brain, serveBrain } from "@aexhq/brain";
 * const server = await serveBrain({ port: 0 });
 * const brain = new Brain({ url: server.url, token: "secret" });
 * try {
 *   console.log((await brain.sessions.list()).length); // 0
 * } finally {
 *   await brain.close();
 *   await server.shutdown();
 * }
 * ```
 */
export async function serveBrain(
  { hostname = "127.0.0.1", port = 0, ...options }: BrainServerOptions & { hostname?: string; port?: number } = {},
): Promise<ServedBrain> {
  const server = await createBrainServer(options);
  const http = Deno.serve({ hostname, port, onListen: () => {} }, server.fetch);
  const url = `http://${http.addr.hostname}:${http.addr.port}`;
  return {
    fetch: server.fetch,
    journal: server.journal,
    get connections() {
      return server.connections;
    },
    dropHost: (id) => server.dropHost(id),
    close: () => server.close(),
    url,
    async shutdown() {
      await server.close();
      await http.shutdown();
    },
  };
}
