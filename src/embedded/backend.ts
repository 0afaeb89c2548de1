import type { HostCredentials } from "./host_token.ts";
import type { SessionMeta } from "../journal/records.ts";
import type { BrainSession } from "../session/handle.ts";
import type { AgentloopOptions } from "../agentloop/agentloop.ts";
import type { SessionModel } from "../model/types.ts";
import type { Environment, PlacedTool } from "../contract/placement.ts";

/** Options for creating a session. */
export interface CreateSessionOptions {
  /** Placed Tools; names must be unique. */
  tools?: readonly PlacedTool[];
  /**
   * Environments that place Tools of their own (such as `mcpEnv`): each is
   * admitted under its grant and its Tools join `tools`. Embedded Brains only.
   */
  environments?: readonly Environment[];
  /** The session id; a random UUID by default. */
  id?: string;
  /**
   * The registered host the session's application Tools belong to; only the
   * token's hash is stored. A remote Brain uses its own connection's host.
   */
  host?: HostCredentials;
  /**
   * The session's fixed provider, model and credentials, or the name of one of
   * the Brain's configured models (a remote Brain takes only a name: providers
   * and credentials stay on the server). Without it the session has no
   * Agentloop and no `ctx.model`.
   */
  model?: SessionModel | string;
  /** Options of the session's Agentloop. */
  agentloop?: AgentloopOptions;
}

/** Options for opening an existing session. */
export interface GetSessionOptions {
  /** Exactly the Tools the session was created with, to restore their handlers. */
  tools?: readonly PlacedTool[];
  /** The Environments the session was created with, placing their Tools again. */
  environments?: readonly Environment[];
  /**
   * The session's registered host credentials; required with `tools` when the
   * session has a host. A remote Brain uses its own connection's host.
   */
  host?: HostCredentials;
  /**
   * The session's model again, or the name of a configured model (credentials
   * are never stored); its provider and model names must match.
   */
  model?: SessionModel | string;
  /** Options of the session's Agentloop. */
  agentloop?: AgentloopOptions;
  /**
   * While another live Brain owns the session, wait up to this many ms for its
   * lease to end: a handle with `tools` or `model` then fails `session_owned`,
   * a handle for reading opens without ending that Brain's calls. 0 by default
   * for an embedded Brain; a remote Brain's server, which may be replacing one
   * that died, waits its lease and a second by default.
   */
  waitMs?: number;
}

/** The `brain.sessions` API. */
export interface Sessions {
  /** Creates a session with its Tools; non-host implementations are admitted first. */
  create(options?: CreateSessionOptions): Promise<BrainSession>;
  /**
   * Opens an existing session; alone it gives a handle for reading, also while
   * another Brain owns it. Supplying the original Tools (and the registered
   * host's credentials) restores their handlers for future calls and makes
   * this Brain the session's one owner: it fails `session_owned` while another
   * live Brain owns it (or waits `waitMs`). Calls left open by a stopped owner
   * end `unknown` first; none is dispatched again.
   */
  get(id: string, options?: GetSessionOptions): Promise<BrainSession>;
  /** Ends a session and removes it with its records. */
  delete(id: string): Promise<void>;
  /** Metadata of every stored session this client may see. */
  list(): Promise<SessionMeta[]>;
}

/** What a Brain delegates to: sessions in this process, or a Brain server over a host connection. */
export interface BrainBackend {
  /** Creates a session. */
  create(options: CreateSessionOptions): Promise<BrainSession>;
  /** Opens a session, restoring handlers of `options.tools`. */
  get(id: string, options: GetSessionOptions): Promise<BrainSession>;
  /** Ends and removes a session. */
  delete(id: string): Promise<void>;
  /** Lists visible sessions. */
  list(): Promise<SessionMeta[]>;
  /** Ends every open handle and releases the backend. */
  close(): Promise<void>;
}
