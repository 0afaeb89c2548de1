/**
 * Test helpers for applications built on Brain: `ScriptedProvider` answers model
 * calls from a script, so a session's Agentloop runs without a real model.
 *
 * @example
 * ```ts
 * import { Brain } from "@aexhq/brain";
 * import { ScriptedProvider } from "@aexhq/brain/testing";
 *
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ model: { provider: new ScriptedProvider(["Hi!"]), model: "demo" } });
 *   console.log((await session.send("Hello")).content); // "Hi!"
 * } finally {
 *   await brain.close();
 * }
 * ```
 *
 * @module
 */
import { BrainError } from "../outcome/errors.ts";
import { readList, readOptions } from "../outcome/known_keys.ts";
import type { JsonValue } from "../outcome/json.ts";
import { raceSignal } from "../util/signal.ts";
import type { ModelProvider, ModelResult, ModelToolCallError, ModelUsage, ProviderCall } from "./types.ts";

export type * from "./types.ts";
export type { JsonValue } from "../outcome/json.ts";

/** A scripted reply: text, tool calls (ids default to `call_<n>`), or an error to throw. */
export type ScriptedReply =
  | string
  | {
    content?: string;
    toolCalls?: { name: string; input: JsonValue; id?: string; error?: ModelToolCallError }[];
    refusal?: string;
    stopReason?: string;
    usage?: ModelUsage;
  }
  | Error;

/** One step of a script: a reply, or a function of the call that computes one (it may wait on `call.signal`). */
export type ScriptStep = ScriptedReply | ((call: ProviderCall) => ScriptedReply | Promise<ScriptedReply>);

/**
 * A model provider that answers from a script, one step per call, for tests
 * and examples. It records every call it received. Usage is counted as one
 * token per four characters, so it is deterministic.
 *
 * @example
 * ```ts
 * import { ScriptedProvider } from "@aexhq/brain/testing";
 * const provider = new ScriptedProvider([
 *   { toolCalls: [{ name: "lookup", input: { id: "7" } }] },
 *   "The record is Ada.",
 * ]);
 * console.log(provider.remaining); // 2
 * ```
 */
export class ScriptedProvider implements ModelProvider {
  /** Provider name recorded with each call. */
  readonly name: string;
  /** Every call received, in order. */
  readonly calls: ProviderCall[] = [];
  #steps: ScriptStep[];

  /** Creates a provider that answers with `steps` in order. */
  constructor(steps: ScriptStep[], options: { name?: string } = {}) {
    const { name = "scripted" } = readOptions("ScriptedProvider options", options, ["name"]);
    if (typeof name !== "string") throw new BrainError("invalid_argument", "a ScriptedProvider's name is a string");
    this.name = name;
    this.#steps = readList("a ScriptedProvider's steps", steps) as ScriptStep[];
  }

  /** Steps not yet used. */
  get remaining(): number {
    return this.#steps.length;
  }

  /** Answers with the next step; throws `model_error` when the script is used up. */
  async complete(call: ProviderCall): Promise<ModelResult> {
    this.calls.push(call);
    const number = this.calls.length;
    const step = this.#steps.shift();
    if (step === undefined) throw new BrainError("model_error", `the script has no step for call ${number}`);
    const reply = typeof step === "function" ? await raceSignal(Promise.resolve(step(call)), call.signal) : step;
    if (reply instanceof Error) throw reply;
    const { content = "", toolCalls = [], stopReason, usage, refusal } = typeof reply === "string"
      ? { content: reply }
      : reply;
    return {
      ...(refusal === undefined ? {} : { refusal }),
      content,
      toolCalls: toolCalls.map((toolCall, index) => ({
        id: toolCall.id ?? `call_${number}_${index + 1}`,
        name: toolCall.name,
        input: toolCall.input,
        ...(toolCall.error ? { error: toolCall.error } : {}),
      })),
      stopReason: stopReason ?? (toolCalls.length > 0 ? "tool_calls" : "stop"),
      model: call.model,
      usage: usage ?? countUsage(call, content, toolCalls),
    };
  }
}

function countUsage(call: ProviderCall, content: string, toolCalls: unknown[]): ModelUsage {
  const tokens = (text: string) => Math.ceil(text.length / 4);
  const { system, messages, tools } = call.request;
  return {
    inputTokens: tokens(system + JSON.stringify(messages) + (tools.length ? JSON.stringify(tools) : "")),
    outputTokens: tokens(content + (toolCalls.length ? JSON.stringify(toolCalls) : "")),
  };
}
