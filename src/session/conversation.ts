import type { JournalRecord, RecordBody } from "../journal/records.ts";
import type { ModelCaller } from "./model_call.ts";
import type { Session } from "./session.ts";

/** A committed `assistant_message` record. */
export type AssistantMessage = Extract<JournalRecord, { kind: "assistant_message" }>;

/** Options for `session.send`. */
export interface SendOptions {
  /** Aborting stops waiting for the reply; the loop keeps going (use `session.interrupt()` to stop it). */
  signal?: AbortSignal;
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

/** What a session hands the factory of its Agentloop. */
export interface ConversationParts {
  /** The session. */
  session: Session;
  /** The session's model calls. */
  models: ModelCaller;
  /** Commits the loop's own records. */
  append(bodies: RecordBody[]): Promise<JournalRecord[]>;
}
