import type { ZodType } from "zod";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { isEnvelope } from "../outcome/outcome.ts";
import type { CallSink, PublishedResult } from "../contract/call.ts";
import { type NormalizedOutput, normalizeOutput } from "../run/output.ts";
import { raceSignal } from "../util/signal.ts";
import { CONTENT_WITHOUT_RESULT } from "../run/report_arguments.ts";
import { type HostCall, refusal, type Reply } from "./sandbox_protocol.ts";

/**
 * Brain's side of a Component's host imports: each call goes to the call's
 * sink and resolves with the reply the guest sees. Outcome JSON is parsed and
 * validated like an application Tool's output; a malformed one is `invalid_output`.
 */
export async function answerHostCall(call: HostCall, sink: CallSink, output: ZodType | undefined): Promise<Reply> {
  const [first, second] = call.args;
  try {
    switch (call.op) {
      case "emit": {
        const data = parseJson(second);
        if (data === undefined) return refusal("invalid_argument", "event data is not JSON text");
        return { tag: "ok", val: await sink.emit(first ?? "", data) };
      }
      case "emit-result": {
        const normalized = await parseOutcome(first, sink, output);
        if (normalized.invalid) return invalidOutput(normalized);
        return { tag: "ok", val: await sink.emitResult(withContent(normalized, second)) };
      }
      case "returned": {
        if (first === undefined && second !== undefined) return refusal("invalid_argument", CONTENT_WITHOUT_RESULT);
        if (first === undefined) {
          await sink.returned();
          return { tag: "ok" };
        }
        const normalized = await parseOutcome(first, sink, output);
        if (normalized.invalid) {
          await sink.finish({ outcome: normalized.outcome }, "error");
          return invalidOutput(normalized);
        }
        await sink.returned(withContent(normalized, second));
        return { tag: "ok" };
      }
      case "finish": {
        if (first === undefined && second !== undefined) return refusal("invalid_argument", CONTENT_WITHOUT_RESULT);
        if (first === undefined) return finished(await sink.finish(undefined));
        const normalized = await parseOutcome(first, sink, output);
        if (normalized.invalid) {
          await sink.finish({ outcome: normalized.outcome }, "error");
          return invalidOutput(normalized);
        }
        return finished(await sink.finish(withContent(normalized, second)));
      }
      case "model": {
        const request = parseJson(first);
        if (request === undefined) return refusal("invalid_argument", "the model request is not JSON text");
        return { tag: "ok", val: JSON.stringify(await sink.model(request as never)) };
      }
    }
  } catch (error) {
    if (error instanceof BrainError) return refusal(error.code, error.message);
    return refusal("protocol_error", error instanceof Error ? error.message : String(error));
  }
  return refusal("protocol_error", `unknown host call ${call.op}`);
}

function parseJson(text: string | undefined): JsonValue | undefined {
  try {
    return typeof text === "string" ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

async function parseOutcome(
  text: string | undefined,
  sink: CallSink,
  output: ZodType | undefined,
): Promise<NormalizedOutput> {
  const value = parseJson(text);
  if (!isEnvelope(value)) {
    return {
      outcome: {
        status: "error",
        error: {
          code: "invalid_output",
          message: value === undefined ? "the outcome is not JSON text" : "the outcome is not an Outcome envelope",
        },
      },
      invalid: true,
    };
  }
  return await raceSignal(normalizeOutput(output, value), sink.signal);
}

function invalidOutput(normalized: NormalizedOutput): Reply {
  const error = normalized.outcome.status === "error" ? normalized.outcome.error : undefined;
  return refusal("invalid_output", error?.message ?? "invalid output");
}

function withContent({ outcome }: NormalizedOutput, content: string | undefined): PublishedResult {
  return content === undefined ? { outcome } : { outcome, content };
}

function finished({ sequence, late }: { sequence: number; late: boolean }): Reply {
  return late
    ? refusal("call_finished", `the call had already ended (terminal record ${sequence})`)
    : { tag: "ok", val: sequence };
}
