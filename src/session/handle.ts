import type { ReadOptions } from "../journal/journal.ts";
import type { JournalRecord } from "../journal/records.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { PlacedTool } from "../contract/placement.ts";
import type { Activation } from "./activation.ts";
import type { CallOptions } from "./call_arguments.ts";
import type { CallEnd } from "./call_state.ts";
import type { AssistantMessage, SendOptions } from "./conversation.ts";

/** A started Tool call. */
export interface ToolCall {
  /** Sequence of its `tool_call_started` record. */
  readonly sequence: number;
  /** Resolves when the call's terminal record is committed. */
  readonly ended: Promise<CallEnd>;
  /** Cancels the call; it ends `cancelled` unless it already ended. */
  cancel(message?: string): Promise<CallEnd>;
}

/**
 * A session handle as every Brain gives it, embedded or remote: start and call
 * its Tools, talk to its Agentloop, read and follow its records, end it.
 */
export interface BrainSession {
  /** Session id. */
  readonly id: string;
  /** The Tools whose handlers this handle holds. */
  readonly tools: PlacedTool[];
  /** A new activation with this session's budgets. */
  activation(): Activation;
  /** Real path of a binding's workspace in this session, when its grant has one. */
  workspace(envName: string): string | undefined;
  /**
   * Commits the call's intent, dispatches it once and returns its handle. The
   * input is read once, when called: the intent and the Tool get a frozen copy.
   */
  start(target: PlacedTool | string, input: JsonValue, options?: CallOptions): Promise<ToolCall>;
  /** Starts a call and waits for its end. */
  call(target: PlacedTool | string, input: JsonValue, options?: CallOptions): Promise<CallEnd>;
  /** Sends a user message to the Agentloop and resolves with the reply that ends the activation answering it. */
  send(content: string, options?: SendOptions): Promise<AssistantMessage>;
  /** Interrupts the Agentloop's running activation; Tools keep running. */
  interrupt(): void;
  /** Committed records in sequence order. */
  read(options?: ReadOptions): Promise<JournalRecord[]>;
  /**
   * Follows committed records from `from` on, whoever commits them (this handle, or the session's owner when this
   * is a reading handle), until `signal` aborts or the Brain closes; ending this handle does not stop it.
   */
  records(options?: { from?: number; signal?: AbortSignal }): AsyncIterable<JournalRecord>;
  /** Ends the handle: the Agentloop stops, open calls end `cancelled`, handlers are released. */
  end(): Promise<void>;
}
