import { Hono } from "hono";
import { BRAIN_OPTIONS, type BrainOptions, EmbeddedBackend } from "../../embedded/embedded.ts";
import type { Journal } from "../../journal/journal.ts";
import { HostSocketHandler, OpenCalls } from "./socket_handler.ts";
import { PendingUpgrades } from "./pending_upgrades.ts";
import {
  errorFrame,
  HOST_IN_USE,
  HOST_PATH,
  PROTOCOL_HEADER,
  PROTOCOL_VERSION,
  protocolVersion,
  SERVER_TOKEN_HEADER,
} from "../protocol.ts";
import { type HostAdmission, HostRegistry } from "./registry.ts";
import { type ServerLimits, serverLimits } from "./limits.ts";
import { BrainError } from "../../outcome/errors.ts";
import { allKeys, isInstance, readOptions } from "../../outcome/known_keys.ts";
import { errorText } from "../../util/error_text.ts";
import { shownValue } from "../../util/shown_value.ts";
import { isName } from "../../util/names.ts";
import { viewerRoutes } from "../../viewer/viewer.ts";
import { ClusterNode, HEALTH_PATH } from "./cluster_node.ts";
import { checkNodeUrl } from "../../journal/nodes.ts";
import { storageError } from "../../journal/storage_error.ts";
import { settledWithin } from "../../util/settled_within.ts";
import { paused } from "../../util/paused.ts";
import { checkTimerMs } from "../../util/timer.ts";

/** How long shutting down waits for requests being answered before it closes their connections. */
const SHUTDOWN_WAIT_MS = 1_000;
/** Codes of a journal that could not answer while a host's credentials were checked. */
const STORE_DOWN = new Set<string>(["storage_unavailable", "storage_full"]);

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

/** Options for a Brain server: an embedded Brain's, who it admits, and its limits. */
export interface BrainServerOptions extends BrainOptions, HostAdmission {
  /** Per-host limits over {@linkcode SERVER_LIMITS}. */
  limits?: Partial<ServerLimits>;
  /**
   * How often (ms) the server pings a host it has not heard from; a host that
   * stays silent for one more interval is disconnected and its open calls end
   * `unknown`. 15 000 by default.
   */
  pingIntervalMs?: number;
  /**
   * The URL hosts reach this server at, which it beats into the journal as its
   * heartbeat: other servers sharing the journal send a host here when this
   * server owns a session the host opens ({@linkcode serveBrain} advertises the
   * URL it listens on). With it the server also takes over the sessions whose
   * owner's lease lapsed while calls were open, ending those calls `unknown`.
   * Without it no host is sent here.
   */
  advertiseUrl?: string;
}

/** Every option of {@linkcode createBrainServer}: an embedded Brain's and the server's own. */
const SERVER_OPTIONS: readonly string[] = [
  ...BRAIN_OPTIONS,
  ...allKeys<Omit<BrainServerOptions, keyof BrainOptions>>({
    serverToken: true,
    hostTokens: true,
    limits: true,
    pingIntervalMs: true,
    advertiseUrl: true,
  }),
];
/** Every option of {@linkcode serveBrain}: the server's and where it listens. */
const SERVED_OPTIONS: readonly string[] = [...SERVER_OPTIONS, "hostname", "port"];

/**
 * Builds the Brain server app over a journal opened as `Brain.open` opens one. `GET /v1/host?host=ID` with
 * `Authorization: Bearer TOKEN` upgrades to the host WebSocket. A host id the server knows (from `hostTokens`,
 * an earlier registration, or its sessions) needs its token; a new id also needs the operator credential
 * `serverToken` in the `brain-server-token` header. Anything else gets 401 before anything is registered,
 * and nothing is registered before the upgrade succeeds. A server told neither `serverToken` nor `hostTokens`
 * is refused with `invalid_argument`. `options.models` are the models clients name
 * (`sessions.create({ model: "default" })`): providers and credentials stay here.
 * Session ids are per host: host `a`'s session `x` and host `b`'s `x` are two sessions, kept in the journal
 * under the keys `a~x` and `b~x`, so no answer to one host depends on another's sessions.
 * The journal viewer is at `/viewer/`, its read API under `/v1/sessions`: `serverToken` sees every
 * session there under its key, and a host's id and token see the sessions placed in it under its own ids.
 */
export async function createBrainServer(options: BrainServerOptions): Promise<BrainServer> {
  const { serverToken, hostTokens, limits: given, pingIntervalMs = 15_000, advertiseUrl, ...brainOptions } =
    readOptions(
      "Brain server options",
      options,
      SERVER_OPTIONS,
    );
  checkTimerMs("pingIntervalMs", pingIntervalMs);
  if (advertiseUrl !== undefined) checkNodeUrl(advertiseUrl);
  const limits = serverLimits(given);
  const backend = await EmbeddedBackend.open(brainOptions);
  let hosts: HostRegistry;
  try {
    hosts = new HostRegistry(backend.journal, { serverToken, hostTokens }, limits);
  } catch (error) {
    await backend.close();
    throw error;
  }
  const cluster = new ClusterNode(backend.journal, backend.node);
  if (advertiseUrl !== undefined) cluster.start(advertiseUrl, backend.leaseMs, (id) => backend.recover(id));
  const calls = new OpenCalls();
  // A socket whose client was gone before its upgrade was answered never opens: it is given up after one ping interval.
  const upgrades = new PendingUpgrades(pingIntervalMs);
  const sockets = new Set<HostSocketHandler>();
  const app = new Hono();
  let connections = 0;
  const refuse = (status: 400 | 401 | 404 | 426 | 429 | 503, error: BrainError) =>
    Response.json({ error: errorFrame(error) }, { status });

  app.get(HEALTH_PATH, (c) => c.json({ ok: true, node: backend.node }));
  app.get(HOST_PATH, async (c) => {
    const id = c.req.query("host");
    if (!isName(id)) {
      return refuse(400, new BrainError("invalid_argument", "name the host: ?host=ID, ID letters, digits, -, _, ."));
    }
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      return refuse(426, new BrainError("protocol_error", "expected a WebSocket upgrade"));
    }
    const token = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1];
    let registration: { id: string; tokenHash: string; registers?: true };
    try {
      registration = await hosts.authenticate(id, token, c.req.header(SERVER_TOKEN_HEADER));
      // Again after the await: new ids authenticated meanwhile may have taken the last places.
      if (registration.registers) hosts.checkRoom(id);
    } catch (error) {
      // A journal that cannot answer is an outage the client waits out, not a wrong token.
      const failure = storageError(error);
      const status = failure.code === "limit_exceeded" ? 429 : STORE_DOWN.has(failure.code) ? 503 : 401;
      return refuse(status, failure);
    }
    let upgraded: { socket: WebSocket; response: Response };
    try {
      upgraded = Deno.upgradeWebSocket(c.req.raw);
    } catch {
      return refuse(400, new BrainError("protocol_error", "not a valid WebSocket upgrade"));
    }
    const { socket, response } = upgraded;
    // The client sends nothing of a later version than the one named here.
    response.headers.set(PROTOCOL_HEADER, String(PROTOCOL_VERSION));
    upgrades.track(socket);
    const host = hosts.admit(registration);
    if (!host) {
      socket.onopen = () => socket.close(4003, "unauthorized");
      return response;
    }
    const instance = c.req.query("instance") ?? crypto.randomUUID();
    const takeover = c.req.query("takeover") === "1";
    const protocol = protocolVersion(c.req.query("protocol"));
    const inUse = () => socket.close(HOST_IN_USE, `host ${id} is connected from another instance`);
    if (!host.admits(instance, takeover)) {
      // Another instance of this host is connected: refused, rather than evicting it.
      socket.onopen = inUse;
      return response;
    }
    // The socket becomes the host's only once it opens: an upgrade whose client left never takes the host's place.
    socket.onopen = () => {
      if (!host.admits(instance, takeover)) return inUse();
      connections++;
      host.attach(socket, instance);
      const handler = new HostSocketHandler({
        socket,
        host,
        backend,
        calls,
        cluster,
        maxFrameBytes: limits.maxFrameBytes,
        maxUnreadBytes: limits.maxUnreadBytes,
        pingIntervalMs,
        protocol,
      });
      sockets.add(handler);
      handler.closed.then(() => sockets.delete(handler));
    };
    return response;
  });
  app.route("/", viewerRoutes(backend.journal, { operatorToken: serverToken }));
  app.notFound((c) =>
    refuse(404, new BrainError("invalid_argument", `no route ${c.req.method} ${new URL(c.req.url).pathname}`))
  );

  const built: BrainServer = {
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
    async close() {
      upgrades.close();
      await cluster.stop();
      // The sessions end first, while their hosts are connected: each caller hears how its call ended (cancelled,
      // the session ended), or that its end could not commit, before the link goes, instead of waiting for a
      // server that may never come back.
      hosts.stopping();
      await backend.close();
      for (const socket of sockets) socket.abandon();
      hosts.closeAll();
      // A graceful HTTP shutdown hangs on a WebSocket still closing, so wait (a little) until they have.
      const waited = Promise.withResolvers<void>();
      const timer = setTimeout(waited.resolve, 1_000);
      await Promise.race([Promise.all([...sockets].map((socket) => socket.closed)), waited.promise]);
      clearTimeout(timer);
    },
  };
  halfOpen.set(built, upgrades);
  return built;
}

/** The upgrades of each server whose socket has not opened, on which Deno's graceful HTTP shutdown may wait forever. */
const halfOpen = new WeakMap<BrainServer, PendingUpgrades>();

/** How many upgrades of `server` wait for their socket to open: bounded, whatever clients do. */
export function pendingUpgrades(server: BrainServer): number {
  return halfOpen.get(server)?.size ?? 0;
}

/** The most bytes of an unread request body the server reads to its end; past it the body counts as never ending. */
const MAX_DRAINED_BYTES = 1024 * 1024;

/** Reads an unread request body to its end, true once it ended; false when it is over the limit or failed. */
async function drained(body: ReadableStream<Uint8Array>): Promise<boolean> {
  let bytes = 0;
  try {
    for await (const chunk of body) {
      bytes += chunk.length;
      if (bytes > MAX_DRAINED_BYTES) return false;
    }
    return true;
  } catch {
    return false;
  }
}

/** The longest pause between tries to listen again after the listener failed. */
const RELISTEN_MAX_MS = 1_000;

/** A Brain server listening on a loopback port. */
export interface ServedBrain extends BrainServer {
  /** The base URL clients pass to `new Brain({ url, token })`. */
  readonly url: string;
  /** Stops listening, then closes the server. */
  shutdown(): Promise<void>;
}

/**
 * Serves a Brain on `hostname` (127.0.0.1 by default) and `port` (0 picks a free one),
 * over the Deno KV file at `path` or the PostgreSQL database at `url` when given. It
 * advertises the URL it listens on (or `advertiseUrl`) as its heartbeat in that journal,
 * so the other servers sharing it send hosts of the sessions it owns here.
 *
 * @example
 * ```ts ignore
 * import { Brain } from "@aexhq/brain";
 * import { serveBrain } from "@aexhq/brain/server";
 * const server = await serveBrain({ port: 0, hostTokens: { app: "secret" } });
 * const brain = new Brain({ url: server.url, token: "secret", host: "app" });
 * try {
 *   console.log((await brain.sessions.list()).length); // 0
 * } finally {
 *   await brain.close();
 *   await server.shutdown();
 * }
 * ```
 */
export async function serveBrain(
  served: BrainServerOptions & { hostname?: string; port?: number },
): Promise<ServedBrain> {
  const { hostname = "127.0.0.1", port = 0, ...options } = readOptions("Brain server options", served, SERVED_OPTIONS);
  // Listening first gives the URL the server advertises to its cluster; requests wait for the server meanwhile.
  const ready = Promise.withResolvers<BrainServer>();
  ready.promise.catch(() => {});
  const stop = new AbortController();
  const answering = new Set<Promise<Response>>();
  /** Request bodies no route read, still arriving: Deno's graceful shutdown would wait for their last byte. */
  const receiving = new Set<ReadableStream<Uint8Array>>();
  const handler = (request: Request) => {
    // Taken now: once answered, Deno may have closed the request.
    const body = request.body;
    const answer = ready.promise.then((server) => server.fetch(request));
    answering.add(answer);
    answer.finally(() => {
      answering.delete(answer);
      if (!body || body.locked) return;
      receiving.add(body);
      drained(body).then((done) => done && receiving.delete(body));
    }).catch(() => {});
    return answer;
  };
  let http = listen({ hostname, port, signal: stop.signal }, handler);
  const url = `http://${http.addr.hostname}:${http.addr.port}`;
  /** Aborted as the server stops: a wait to listen again ends at once. */
  const stopping = new AbortController();
  // Deno's accept loop ends at the first accept that fails (too many open files): listen again on the same port,
  // backing off while it still fails, so the server outlives a moment without file descriptors.
  const relisten = (served: Deno.HttpServer<Deno.NetAddr>) =>
    served.finished.catch(async () => {
      for (let attempt = 0;; attempt++) {
        if (!await paused(Math.min(RELISTEN_MAX_MS, 10 * 2 ** attempt), stopping.signal)) return;
        try {
          http = listen({ hostname, port: served.addr.port, signal: stop.signal }, handler);
          relisten(http);
          return;
        } catch {
          // Still out of descriptors, or the port is not free yet: try again.
        }
      }
    });
  relisten(http);
  let server: BrainServer;
  try {
    server = await createBrainServer({ ...options, advertiseUrl: options.advertiseUrl ?? url });
  } catch (error) {
    ready.reject(error);
    stopping.abort();
    await http.shutdown();
    throw error;
  }
  ready.resolve(server);
  const listening: ServedBrain = {
    fetch: server.fetch,
    journal: server.journal,
    get connections() {
      return server.connections;
    },
    dropHost: (id) => server.dropHost(id),
    close: () => server.close(),
    url,
    async shutdown() {
      stopping.abort();
      await server.close();
      // Deno's graceful shutdown waits forever on an upgrade whose client was gone before it was answered, on a
      // request still waiting for a store that stopped answering, and on a request body that never ends: then
      // every connection is closed at once.
      const answered = await settledWithin(Promise.allSettled(answering), SHUTDOWN_WAIT_MS);
      if (answered && halfOpen.get(server)?.settled && receiving.size === 0) await http.shutdown().catch(() => {});
      else stop.abort();
      await http.finished.catch(() => {});
    },
  };
  halfOpen.set(listening, halfOpen.get(server)!);
  return listening;
}

/**
 * `Deno.serve` on `hostname:port`, its failures as BrainErrors: `permission_denied` without the net
 * permission, `invalid_argument` for an address that is taken, cannot be assigned or is no address.
 */
function listen(
  { hostname, port, signal }: { hostname: unknown; port: unknown; signal: AbortSignal },
  handler: Deno.ServeHandler,
): Deno.HttpServer<Deno.NetAddr> {
  if (
    typeof hostname !== "string" || !(Number.isSafeInteger(port) && (port as number) >= 0 && (port as number) <= 65535)
  ) {
    throw new BrainError(
      "invalid_argument",
      `a Brain server listens on a hostname and a port from 0 to 65535, got ${shownValue(hostname)}:${
        shownValue(port)
      }`,
    );
  }
  try {
    return Deno.serve({ hostname, port: port as number, onListen: () => {}, signal }, handler);
  } catch (error) {
    const denied = isInstance(error, Deno.errors.NotCapable) || isInstance(error, Deno.errors.PermissionDenied);
    throw new BrainError(
      denied ? "permission_denied" : "invalid_argument",
      `a Brain server cannot listen on ${hostname}:${port}: ${errorText(error)}`,
      { cause: error, details: { hostname, port: port as number } },
    );
  }
}
