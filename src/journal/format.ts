import type { JournalRecord } from "./records.ts";
import { BrainError } from "../outcome/errors.ts";
import { errorText } from "../util/error_text.ts";
import { heldRecordBody } from "./frozen_record.ts";

/**
 * One readable line for a journal record: sequence, kind and its essentials.
 *
 * @example
 * ```ts
 * import { formatRecord } from "@aexhq/brain";
 * const line = formatRecord({ kind: "tool_returned", call: 1, sessionId: "s", sequence: 2, at: 0 });
 * console.log(line); // "   2  tool_returned        call 1"
 * ```
 */
export function formatRecord(record: JournalRecord): string {
  let kind: unknown;
  try {
    kind = typeof record === "object" && record !== null ? record.kind : undefined;
  } catch {
    kind = undefined;
  }
  if (typeof kind !== "string") throw new BrainError("invalid_argument", "formatRecord takes a journal record");
  try {
    // A record is JSON, as every journal keeps it: anything else (a cycle, a BigInt, a Proxy) is no record.
    // The copy made in that check is what is shown: a getter is read once.
    return formatted(heldRecordBody(record) as JournalRecord);
  } catch (error) {
    if (error instanceof BrainError) throw error;
    // Fields of the wrong shape for their kind (no origin, a deadline that is no time), or a trap that throws.
    throw new BrainError("invalid_argument", `formatRecord cannot show this ${kind} record: ${errorText(error)}`);
  }
}

function formatted(record: JournalRecord): string {
  const head = `${String(record.sequence).padStart(4)}  ${record.kind.padEnd(20)} `;
  switch (record.kind) {
    case "tool_call_started":
      return `${head}${record.tool}(${JSON.stringify(record.input)})${
        record.deadline === undefined ? "" : ` deadline ${new Date(record.deadline).toISOString()}`
      }`;
    case "tool_event":
      return `${head}call ${record.call} ${record.event} ${JSON.stringify(record.data)}`;
    case "tool_result":
      return `${head}call ${record.call} ${JSON.stringify(record.outcome)}${
        record.content === undefined ? "" : ` content ${JSON.stringify(record.content)}`
      }`;
    case "tool_call_finished":
      return `${head}call ${record.call} by ${record.cause}: ${JSON.stringify(record.outcome)}`;
    case "tool_call_late":
      return `${head}call ${record.call} late ${record.cause}, not applied`;
    case "user_message":
      return `${head}${JSON.stringify(record.content)}`;
    case "model_call_started": {
      const origin = record.origin.kind === "tool" ? `${record.origin.tool} (call ${record.origin.call})` : "agentloop";
      const request = "request" in record ? record.request : record.conversation;
      const tools = request.tools?.map((spec) => spec.name).join(", ");
      const messages = "request" in record
        ? `${record.request.messages.length} messages`
        : `${record.conversation.messages.length} new messages${
          record.conversation.previous === undefined ? "" : ` after model call ${record.conversation.previous}`
        }`;
      return `${head}by ${origin} to ${record.provider}/${record.model}: ${messages}${tools ? `, tools ${tools}` : ""}`;
    }
    case "model_call_finished":
      return `${head}model call ${record.call} ${record.outcome.status}${
        record.usage ? ` (${record.usage.inputTokens} in, ${record.usage.outputTokens} out)` : ""
      }`;
    case "assistant_delta":
      return `${head}model call ${record.modelCall} ${JSON.stringify(record.content)}`;
    case "assistant_message":
      return `${head}${JSON.stringify(record.content)}${
        record.toolCalls.map((call) => ` ${call.name}(${JSON.stringify(call.input)})`).join("")
      }`;
    case "tool_message":
      return `${head}${record.toolCallId}${record.call === undefined ? "" : ` (call ${record.call})`}: ${
        JSON.stringify(record.content)
      }`;
    case "observation_message":
      return `${head}call ${record.call}: ${JSON.stringify(record.content)}`;
    case "environment_created":
    case "environment_updated":
      return `${head}${record.environment} by call ${record.call}: ${JSON.stringify(record.description)}`;
    case "environment_deleted":
      return `${head}${record.environment} by call ${record.call}`;
    case "environment_setup":
      return `${head}${record.environment} by call ${record.call}: ${JSON.stringify(record.outcome)}`;
    default:
      return `${head}call ${record.call}`;
  }
}
