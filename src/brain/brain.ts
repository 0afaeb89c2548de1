import { RemoteBackend, type RemoteBrainOptions } from "../host/client/remote_backend.ts";
import type { BrainBackend, CreateSessionOptions, GetSessionOptions, Sessions } from "../embedded/backend.ts";
import { BRAIN_OPTIONS, type BrainOptions, EmbeddedBackend } from "../embedded/embedded.ts";
import { BrainError } from "../outcome/errors.ts";
import { createViewer, type Viewer, type ViewerOptions } from "../viewer/viewer.ts";
import { allKeys, readOptions, readRecord } from "../outcome/known_keys.ts";
import type { HostCredentials } from "../embedded/host_token.ts";
import { checkAgentloopOptions } from "../agentloop/agentloop.ts";
import { promised } from "../util/promised.ts";
import { isPostgresUrl } from "../journal/postgres_url.ts";
import { shownValue } from "../util/shown_value.ts";

export type { CreateSessionOptions, GetSessionOptions, Sessions } from "../embedded/backend.ts";
export type { BrainOptions } from "../embedded/embedded.ts";
export type { RemoteBrainOptions } from "../host/client/remote_backend.ts";

/**
 * A Brain: sessions, their journal and their Tool calls. `new Brain()` runs them
 * in this process; `new Brain({ url, token })` is a client of a Brain server
 * (`deno task serve`) that hosts this application's Tools over one WebSocket.
 * Both have the same API.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const add = tool({
 *   name: "add",
 *   description: "Add two numbers.",
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }, ctx) => ctx.finish(a + b),
 * });
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ tools: [add()] });
 *   const end = await session.call("add", { a: 1, b: 2 });
 *   console.log(end.outcome); // { status: "ok", value: 3 }
 * } finally {
 *   await brain.close();
 * }
 * ```
 */
export class Brain {
  /** Creates, opens and deletes sessions. */
  readonly sessions: Sessions;
  #backend: BrainBackend;
  /** The opened backend `Brain.open` hands to the constructor it calls. */
  static #opened: BrainBackend | undefined;

  /**
   * An embedded Brain over `options.journal` (in memory by default; use
   * {@linkcode Brain.open} for a `path`), or a client of the server at `options.url`.
   */
  constructor(options: BrainOptions | RemoteBrainOptions = {}) {
    const read = Brain.#opened ? options : checkBrainOptions(options);
    const backend = this.#backend = Brain.#opened ??
      (remote(read) ? new RemoteBackend(read) : new EmbeddedBackend(read));
    Brain.#opened = undefined;
    this.sessions = Object.freeze({
      // Read and handed on at once: the session is what the caller passed, whatever its objects hold later.
      create: (create: CreateSessionOptions = {}) =>
        promised(() => backend.create(readSessionOptions(create, CREATE_OPTIONS))),
      get: (id: string, get: GetSessionOptions = {}) => promised(() => backend.get(id, checkGetOptions(get))),
      delete: (id: string) => backend.delete(id),
      list: () => backend.list(),
    });
  }

  /**
   * Opens a Brain, over the Deno KV file at `path` or the PostgreSQL database
   * at `url` (`postgres://...`) when given (another `url` is a Brain server's,
   * as for `new Brain({ url, token })`). Opening owns
   * nothing: several Brains (in several processes) may open one journal and
   * read, follow and list every session. A session has one owner at a time,
   * the Brain that created it or opened it with its Tools; another Brain takes
   * it over only once the owner closed or its lease (`leaseMs`) lapsed, and then
   * ends the calls the owner left open `unknown`, never dispatching them again.
   *
   * @example
   * ```ts
   * import { Brain } from "@aexhq/brain";
   * const brain = await Brain.open({ path: ":memory:" });
   * try {
   *   const session = await brain.sessions.create({ host: { id: "app", token: crypto.randomUUID() } });
   *   console.log((await brain.sessions.get(session.id)).id === session.id); // true
   * } finally {
   *   await brain.close();
   * }
   * ```
   */
  static async open(options: BrainOptions | RemoteBrainOptions = {}): Promise<Brain> {
    const read = checkBrainOptions(options);
    if (remote(read)) return new Brain(read);
    Brain.#opened = await EmbeddedBackend.open(read);
    return new Brain();
  }

  /**
   * The journal viewer of this embedded Brain: a web page at `/viewer/` and its
   * read API, as one `fetch` handler. It only reads the journal, live; it ends
   * its streams when the Brain closes. A remote Brain's viewer is its server's.
   *
   * @example
   * ```ts
   * import { Brain } from "@aexhq/brain";
   * const brain = new Brain();
   * try {
   *   const viewer = brain.viewer({ operatorToken: "secret" });
   *   const response = await viewer.fetch(
   *     new Request("http://localhost/v1/sessions", { headers: { authorization: "Bearer secret" } }),
   *   );
   *   console.log(await response.json()); // { sessions: [] }
   * } finally {
   *   await brain.close();
   * }
   * ```
   */
  viewer(options: ViewerOptions = {}): Viewer {
    const backend = this.#backend;
    if (!(backend instanceof EmbeddedBackend)) {
      throw new BrainError("not_implemented", "a remote Brain's journal viewer is its server's, at /viewer/");
    }
    return createViewer(backend.journal, options);
  }

  /**
   * Ends every open session handle, then closes the journal or the host
   * connection. A remote Brain keeps its WebSocket open (the server may
   * dispatch a Tool call to this process at any time, and Deno cannot unref a
   * client WebSocket), so the process runs until this is called.
   */
  close(): Promise<void> {
    return this.#backend.close();
  }

  /**
   * Closes the Brain when an `await using` block ends.
   *
   * @example
   * ```ts
   * import { Brain } from "@aexhq/brain";
   * await using brain = new Brain();
   * const session = await brain.sessions.create();
   * console.log(session.id.length > 0); // true
   * ```
   */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

const CREATE_OPTIONS = allKeys<CreateSessionOptions>({
  tools: true,
  environments: true,
  id: true,
  host: true,
  model: true,
  agentloop: true,
});
const GET_OPTIONS = allKeys<GetSessionOptions>({
  tools: true,
  environments: true,
  host: true,
  model: true,
  agentloop: true,
  waitMs: true,
});
const REMOTE_OPTIONS = allKeys<RemoteBrainOptions>({
  url: true,
  cluster: true,
  token: true,
  host: true,
  serverToken: true,
  takeover: true,
  maxReconnectDelayMs: true,
  allow: true,
  pingIntervalMs: true,
  deadlineGraceMs: true,
  onConnection: true,
});

const HOST_CREDENTIALS = allKeys<HostCredentials>({ id: true, token: true });

/**
 * Session options read once into plain objects (the host credentials too), refusing a misspelt
 * option, and a getter or Proxy that throws, with `invalid_argument`.
 */
function readSessionOptions<T extends CreateSessionOptions | GetSessionOptions>(
  options: T,
  known: readonly string[],
): T {
  const read = readOptions("session options", options, known);
  if (read.host !== undefined) read.host = readOptions("host credentials", read.host, HOST_CREDENTIALS);
  if (read.agentloop !== undefined) read.agentloop = checkAgentloopOptions(read.agentloop);
  return read;
}

/** Refuses a misspelt option of `sessions.get`, or a wait that is not a number of ms. */
function checkGetOptions(options: GetSessionOptions): GetSessionOptions {
  const read = readSessionOptions(options, GET_OPTIONS);
  const { waitMs } = read;
  if (waitMs !== undefined && !(typeof waitMs === "number" && waitMs >= 0)) {
    throw new BrainError("invalid_argument", `waitMs must be a number of milliseconds, got ${shownValue(waitMs)}`);
  }
  return read;
}

/** Refuses a misspelt Brain option, which would otherwise silently give a different Brain (in memory, say). */
function checkBrainOptions(options: BrainOptions | RemoteBrainOptions): BrainOptions | RemoteBrainOptions {
  const read = readRecord("Brain options", options);
  return remote(read)
    ? readOptions("remote Brain options", read, REMOTE_OPTIONS)
    : readOptions("Brain options", read, BRAIN_OPTIONS);
}

/** True for the options of a Brain server's client: a `url` that is not a PostgreSQL journal's. */
function remote(options: BrainOptions | RemoteBrainOptions): options is RemoteBrainOptions {
  return "url" in options && !isPostgresUrl(options.url);
}
