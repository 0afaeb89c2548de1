import type { Journal } from "../../journal/journal.ts";
import { BrainError } from "../../outcome/errors.ts";
import { fail } from "../../outcome/outcome.ts";
import type { Activation } from "../../session/activation.ts";
import type { Session } from "../../session/session.ts";
import type { CallSink, Invocation } from "../../contract/call.ts";
import type { ServerFrame } from "../protocol.ts";
import { hashToken } from "../../embedded/host_token.ts";
import { sameText } from "../../util/same_text.ts";
import { UploadedComponents } from "../uploaded_components.ts";

/**
 * Brain's record of one registered host: its identity and token hash, its
 * current socket, its open session handles, and the calls dispatched to it
 * that it has not finished. Handles outlive the socket; in-flight calls do not.
 */
export class RegisteredHost {
  /** The host identity. */
  readonly id: string;
  /** SHA-256 of its token, fixed at first registration. */
  readonly tokenHash: string;
  /** Open session handles by the client's handle id. */
  readonly handles: Map<string, Session> = new Map();
  /** Activations named by this host's calls, by `session:id`; each is one server-side budget. */
  readonly activations: Map<string, Activation> = new Map();
  /** Components this host uploaded, by content hash; another host never sees them. */
  readonly components: UploadedComponents = new UploadedComponents();
  #socket: WebSocket | undefined;
  #inflight = new Map<string, CallSink>();

  constructor(id: string, tokenHash: string) {
    this.id = id;
    this.tokenHash = tokenHash;
  }

  /** True while a socket is attached. */
  get connected(): boolean {
    return this.#socket?.readyState === WebSocket.OPEN;
  }

  /** Makes `socket` the host's connection; a previous one is closed and its calls are lost. */
  attach(socket: WebSocket): void {
    const previous = this.#socket;
    this.#socket = socket;
    if (previous) {
      this.#lose();
      previous.close(4000, "replaced by a new connection of the same host");
    }
  }

  /** Forgets `socket` when it is still the current one: every unfinished call dispatched on it ends `unknown`. */
  detach(socket: WebSocket): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    this.#lose();
  }

  /** Closes the current socket from Brain's side, as a network failure would. */
  drop(code = 4001, reason = "dropped by the server"): void {
    this.#socket?.close(code, reason);
  }

  /**
   * Sends one committed call to the host, once. Without an open socket nothing is
   * sent and the call fails with `host_disconnected`.
   */
  dispatch(handle: string, invocation: Invocation, sink: CallSink): void {
    const socket = this.#socket;
    if (!socket || socket.readyState !== WebSocket.OPEN) {
      sink.finish({
        outcome: fail("host_disconnected", `host ${this.id} is not connected; the call was not sent`, {
          retryable: true,
        }),
      }, "error").catch(() => {});
      return;
    }
    const { sessionId: session, sequence: call, tool, input, deadline } = invocation;
    const key = `${session}:${call}`;
    this.#inflight.set(key, sink);
    sink.signal.addEventListener("abort", () => {
      if (this.#inflight.get(key) === sink && this.#socket === socket) {
        send(socket, { t: "abort", session, call, cause: String(sink.signal.reason?.message ?? "ended") });
      }
    }, { once: true });
    send(socket, { t: "invoke", handle, session, call, tool, input, ...(deadline === undefined ? {} : { deadline }) });
  }

  /** The sink of a call dispatched to this host and not yet finished by it. */
  sink(session: string, call: number): CallSink {
    const sink = this.#inflight.get(`${session}:${call}`);
    if (!sink) throw new BrainError("call_not_found", `call ${call} of session ${session} is not running on this host`);
    return sink;
  }

  /** Forgets a call the host has finished. */
  settle(session: string, call: number): void {
    this.#inflight.delete(`${session}:${call}`);
  }

  #lose(): void {
    const lost = [...this.#inflight.values()];
    this.#inflight.clear();
    for (const sink of lost) if (!sink.signal.aborted) sink.finish(undefined, "unknown").catch(() => {});
  }
}

/** Sends one frame; a socket that is closing drops it, and its close settles the calls. */
export function send(socket: WebSocket, frame: ServerFrame): void {
  if (socket.readyState === WebSocket.OPEN) socket.send(JSON.stringify(frame));
}

/**
 * Every host registered with this Brain. A host id's token is fixed by its first
 * registration, or by the sessions placed in it, whose metadata keeps the hash.
 */
export class HostRegistry {
  #hosts = new Map<string, RegisteredHost>();
  #journal: Journal;

  constructor(journal: Journal) {
    this.#journal = journal;
  }

  /** The registered host, or undefined when the token is missing or does not match. */
  async register(id: string, token: string | undefined): Promise<RegisteredHost | undefined> {
    if (!token) return undefined;
    const hash = await hashToken(token);
    let host = this.#hosts.get(id);
    if (!host) {
      const saved = (await this.#journal.listSessions()).find((meta) => meta.host?.id === id)?.host;
      host = this.#hosts.get(id) ?? new RegisteredHost(id, saved?.tokenHash ?? hash);
      this.#hosts.set(id, host);
    }
    return sameText(host.tokenHash, hash) ? host : undefined;
  }

  /** Closes every host socket; their unfinished calls end `unknown`. */
  closeAll(): void {
    for (const host of this.#hosts.values()) host.drop(1001, "the Brain server is shutting down");
  }

  /** A registered host by id. */
  get(id: string): RegisteredHost | undefined {
    return this.#hosts.get(id);
  }
}
