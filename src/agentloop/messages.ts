import type { JournalRecord } from "../journal/records.ts";
import type { ModelMessage } from "../model/types.ts";
import { BrainError } from "../outcome/errors.ts";

/** A record that is part of the Agentloop's conversation with its model. */
export type ConversationRecord = Extract<
  JournalRecord,
  { kind: "user_message" | "assistant_message" | "tool_message" | "observation_message" }
>;

const conversationKinds = new Set(["user_message", "assistant_message", "tool_message", "observation_message"]);

/** True for the records a model request's messages are built from. */
export function isConversationRecord(record: JournalRecord): record is ConversationRecord {
  return conversationKinds.has(record.kind);
}

/** Answer of a tool call that has no tool message. */
export const NO_RESULT = "No result: the call did not complete.";

/**
 * Model messages built from conversation records in sequence order, one record
 * at a time: each assistant message is followed by one tool message per tool
 * call, which a later `tool_message` for that call id fills in (until then it
 * says the call did not complete). A message, once built, is never rebuilt.
 */
export class ConversationMessages {
  #messages: ModelMessage[] = [];
  /** Where the tool message answering each call id of the latest assistant message that made it sits. */
  #slots = new Map<string, number>();
  #last = 0;

  /** Sequence of the last record added, or 0. */
  get last(): number {
    return this.#last;
  }

  /** Adds the next record; its sequence must be above every earlier one. */
  add(record: ConversationRecord): void {
    this.#last = record.sequence;
    switch (record.kind) {
      case "user_message":
      case "observation_message":
        this.#messages.push(Object.freeze({ role: "user", content: record.content }));
        return;
      case "assistant_message": {
        const { content, toolCalls } = record;
        if (!Array.isArray(toolCalls) || !toolCalls.every((call) => typeof call?.id === "string")) {
          // A journal appended to directly may hold any JSON here; a model never answered it.
          throw new BrainError(
            "journal_corrupt",
            `session ${record.sessionId}: record ${record.sequence} is an assistant_message whose toolCalls are no list of tool calls`,
            { details: { sessionId: record.sessionId, sequence: record.sequence } },
          );
        }
        this.#messages.push(
          Object.freeze(
            toolCalls.length > 0 ? { role: "assistant", content, toolCalls } : { role: "assistant", content },
          ),
        );
        for (const { id } of toolCalls) {
          this.#slots.set(id, this.#messages.length);
          this.#messages.push(Object.freeze({ role: "tool", toolCallId: id, content: NO_RESULT }));
        }
        return;
      }
      case "tool_message": {
        const slot = this.#slots.get(record.toolCallId);
        if (slot === undefined) return;
        this.#messages[slot] = Object.freeze({ role: "tool", toolCallId: record.toolCallId, content: record.content });
        return;
      }
    }
  }

  /** The messages so far, as a new array the builder never changes. */
  snapshot(): ModelMessage[] {
    return this.#messages.slice();
  }
}

/** The model messages of `records`, in sequence order whatever order they come in. */
export function conversationMessages(records: Iterable<ConversationRecord>): ModelMessage[] {
  const builder = new ConversationMessages();
  for (const record of [...records].sort((a, b) => a.sequence - b.sequence)) builder.add(record);
  return builder.snapshot();
}
