import type { ConversationRequest, JournalRecord } from "../journal/records.ts";
import type { ModelToolSpec, NormalizedModelRequest } from "../model/types.ts";
import { BrainError } from "../outcome/errors.ts";
import { conversationMessages, type ConversationRecord, isConversationRecord } from "./messages.ts";

/**
 * The exact request the provider received for model call `call`, rebuilt from
 * the session's records: a Tool's request as its `model_call_started` keeps it,
 * an Agentloop request from the conversation records its chain of
 * `model_call_started` records refers to. Throws `invalid_argument` when the
 * records do not hold the call or what it refers to.
 */
export function rebuildModelRequest(records: readonly JournalRecord[], call: number): NormalizedModelRequest {
  const bySequence = new Map(records.map((record) => [record.sequence, record]));
  const started = startedRecord(bySequence, call);
  if ("request" in started) return started.request;
  const conversation: ConversationRecord[] = [];
  let system: string | undefined;
  let tools: ModelToolSpec[] | undefined;
  for (let link: ConversationRequest | undefined = started.conversation; link;) {
    for (const sequence of link.messages) {
      const record = bySequence.get(sequence);
      if (!record || !isConversationRecord(record)) {
        throw new BrainError("invalid_argument", `model call ${call} refers to ${sequence}, not a conversation record`);
      }
      conversation.push(record);
    }
    system ??= link.system;
    tools ??= link.tools;
    if (link.previous === undefined) break;
    const previous = startedRecord(bySequence, link.previous);
    if (!("conversation" in previous)) {
      throw new BrainError("invalid_argument", `model call ${call} extends ${link.previous}, not an Agentloop request`);
    }
    link = previous.conversation;
  }
  return { system: system ?? "", messages: conversationMessages(conversation), tools: tools ?? [] };
}

function startedRecord(bySequence: Map<number, JournalRecord>, call: number) {
  const record = bySequence.get(call);
  if (record?.kind !== "model_call_started") {
    throw new BrainError("invalid_argument", `record ${call} is not a model_call_started record`);
  }
  return record;
}
