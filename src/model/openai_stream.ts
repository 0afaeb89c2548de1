import { z } from "zod";
import { BrainError } from "../outcome/errors.ts";
import { lines } from "../util/lines.ts";
import { isInstance } from "../outcome/known_keys.ts";
import type { ModelResult } from "./types.ts";
import { fromWireToolCall, type LooseToolCall, reportedError, wireChunk, wireError } from "./openai_wire.ts";

/**
 * Reads a chat-completions event stream (`text/event-stream`, one
 * `chat.completion.chunk` per `data:` event, ending with `data: [DONE]`) into
 * one ModelResult, passing each text fragment to `onDelta` as it arrives.
 * An error event is a `model_error`; a malformed event a `protocol_error`.
 * Errors from reading the body itself propagate unchanged.
 */
export async function readChatStream(
  name: string,
  model: string,
  body: ReadableStream<Uint8Array>,
  onDelta: ((text: string) => void) | undefined,
): Promise<ModelResult> {
  const result: ModelResult = { content: "", toolCalls: [], stopReason: "", model };
  let refusal = "";
  // By the provider's index, which may be any integer: a sparse array would make a huge index a long loop.
  const calls = new Map<number, LooseToolCall>();
  let data: string[] = [];
  let done = false;
  const dispatch = () => {
    const event = data.join("\n");
    data = [];
    if (event === "") return;
    if (event === "[DONE]") {
      done = true;
      return;
    }
    const chunk = parseChunk(name, event);
    if (chunk.model) result.model = chunk.model;
    if (chunk.usage) {
      result.usage = { inputTokens: chunk.usage.prompt_tokens, outputTokens: chunk.usage.completion_tokens };
    }
    for (const choice of chunk.choices ?? []) {
      if (choice.finish_reason) result.stopReason = choice.finish_reason;
      const delta = choice.delta;
      if (!delta) continue;
      if (delta.content) {
        result.content += delta.content;
        onDelta?.(delta.content);
      }
      if (delta.refusal) refusal += delta.refusal;
      for (const part of delta.tool_calls ?? []) {
        let call = calls.get(part.index);
        if (!call) calls.set(part.index, call = {});
        if (part.id) call.id = part.id;
        if (part.type) call.type = part.type;
        if (part.function) {
          const fn = call.function ??= {};
          if (part.function.name) fn.name = part.function.name;
          if (part.function.arguments) fn.arguments = `${fn.arguments ?? ""}${part.function.arguments}`;
        }
        if (part.custom) {
          const custom = call.custom ??= {};
          if (part.custom.name) custom.name = part.custom.name;
          if (part.custom.input) custom.input = `${custom.input ?? ""}${part.custom.input}`;
        }
      }
    }
  };
  for await (const line of lines(body)) {
    if (done) break;
    const text = line.endsWith("\r") ? line.slice(0, -1) : line;
    if (text === "") dispatch();
    else if (text.startsWith("data:")) data.push(text.slice(text.startsWith("data: ") ? 6 : 5));
    // Comments (":") and other fields (event, id, retry) carry nothing for chat completions.
  }
  const cut = () =>
    new BrainError("connection_lost", `provider ${name}: the stream ended before the response was complete`);
  if (!done) {
    // An event the stream ended inside of, without its blank line, was cut off unless it parses.
    try {
      dispatch();
    } catch (error) {
      throw isInstance(error, BrainError) && error.code === "protocol_error" ? cut() : error;
    }
  }
  if (!done && result.stopReason === "") throw cut();
  result.toolCalls = [...calls.keys()].sort((a, b) => a - b).map((index, order) =>
    fromWireToolCall(calls.get(index), order)
  );
  result.stopReason ||= "stop";
  if (refusal) result.refusal = refusal;
  return result;
}

function parseChunk(name: string, event: string): z.infer<typeof wireChunk> {
  let json: unknown;
  try {
    json = JSON.parse(event);
  } catch {
    throw new BrainError("protocol_error", `provider ${name} streamed an event that is not JSON`);
  }
  const failed = wireError.safeParse(json);
  if (failed.success) throw reportedError(name, failed.data.error, "reported an error in the stream");
  const parsed = wireChunk.safeParse(json);
  if (!parsed.success) {
    throw new BrainError(
      "protocol_error",
      `provider ${name} streamed an event that is not a chat completion chunk: ${z.prettifyError(parsed.error)}`,
    );
  }
  return parsed.data;
}
