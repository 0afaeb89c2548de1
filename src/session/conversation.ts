import { BrainError } from "../outcome/errors.ts";
import { allKeys, isInstance, readOptions } from "../outcome/known_keys.ts";
import type { JournalRecord, RecordBody } from "../journal/records.ts";
import type { ModelCaller } from "./model_call.ts";
import type { PlacedTool } from "../contract/placement.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Activation } from "./activation.ts";
import { checkMessageSize } from "../contract/budgets.ts";
import { raceSignal } from "../util/signal.ts";

/** A committed `assistant_message` record. */
export type AssistantMessage = Extract<JournalRecord, { kind: "assistant_message" }>;

/** Options for `session.send`. */
export interface SendOptions {
  /**
   * Aborting stops waiting for the reply: `send` rejects with the abort's
   * reason when that is a `BrainError`, else with `cancelled`, and the loop
   * keeps going (use `session.interrupt()` to stop it). A signal already
   * aborted commits nothing.
   */
  signal?: AbortSignal;
}

const SEND_OPTIONS = allKeys<SendOptions>({ signal: true });

/**
 * The arguments of `session.send`, read once and checked: a string message of
 * at most `BRAIN_MAX_MESSAGE_BYTES`, options with an AbortSignal.
 */
export function checkSendArguments(content: unknown, options: SendOptions | undefined): SendOptions {
  if (typeof content !== "string") throw new BrainError("invalid_argument", "a user message must be a string");
  checkMessageSize(content);
  if (options === undefined) return {};
  const read = readOptions("send options", options, SEND_OPTIONS);
  const { signal } = read;
  if (signal === undefined) return read;
  if (!isInstance<AbortSignal>(signal, AbortSignal)) {
    throw new BrainError("invalid_argument", "send options: signal must be an AbortSignal");
  }
  // The caller stopped waiting before asking: nothing is committed, as fetch sends nothing for an aborted signal.
  if (signal.aborted) throw stoppedWaiting(signal.reason);
  return read;
}

/**
 * `reply`, until `signal` aborts: then the abort's reason when it is a BrainError, else `cancelled` with the
 * reason as its cause, so a send always fails with a code however its caller aborted.
 */
export function awaitReply<T>(reply: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return reply;
  return raceSignal(reply, signal).catch((error) => {
    throw signal.aborted && error === signal.reason ? stoppedWaiting(error) : error;
  });
}

function stoppedWaiting(reason: unknown): BrainError {
  if (reason instanceof BrainError) return reason;
  return new BrainError("cancelled", "the caller stopped waiting for the reply (its signal aborted)", {
    cause: reason,
  });
}

/** What a session's Agentloop offers the session: the conversation with its model. */
export interface Conversation {
  /** Commits a user message and resolves with the reply that ends the activation answering it. */
  send(content: string, options?: SendOptions): Promise<AssistantMessage>;
  /** Stops the running activation: its pending model call ends `unknown`; its Tools keep running. */
  interrupt(): void;
  /** Stops the loop for good; resolves when its last commit is done. */
  close(): Promise<void>;
}

/** What an Agentloop sees of its session: its Tools, its budgets, starting calls and reading records. */
export interface SessionPort {
  /** Session id. */
  readonly id: string;
  /** The placed Tools the loop may advertise and call. */
  readonly tools: readonly PlacedTool[];
  /** A new activation with the session's budgets. */
  activation(): Activation;
  /** Commits a call's intent and dispatches it once; resolves with the call's sequence. */
  start(
    target: PlacedTool,
    input: JsonValue,
    options: { activation: Activation; deadline: number | undefined; toolCallId: string },
  ): Promise<{ readonly sequence: number }>;
  /** Committed records in sequence order. */
  read(): Promise<JournalRecord[]>;
  /** Follows committed records from `from` on, until `signal` aborts. */
  records(options: { from?: number; signal?: AbortSignal }): AsyncIterable<JournalRecord>;
}

/** What a session hands the factory of its Agentloop. */
export interface ConversationParts {
  /** The session. */
  session: SessionPort;
  /** The session's model calls. */
  models: ModelCaller;
  /** Commits the loop's own records. */
  append(bodies: RecordBody[]): Promise<JournalRecord[]>;
}
