import { BrainError } from "../outcome/errors.ts";
import { findNonJson, frozenJsonSized, type JsonValue } from "../outcome/json.ts";
import { allKeys, isInstance, readOptions } from "../outcome/known_keys.ts";
import type { PlacedTool } from "../contract/placement.ts";
import { factoryImplementation } from "../tool/tool.ts";
import { shownValue } from "../util/shown_value.ts";
import { Activation } from "./activation.ts";

/** Options for one Tool call. */
export interface CallOptions {
  /**
   * Absolute deadline in milliseconds since the epoch, such as `Date.now() + 5_000`;
   * omitted means unlimited. A deadline already past ends the call `timeout` before it runs.
   * Without one, the caller waits as long as the Tool runs: over a remote Brain, as long as
   * its server answers pings (a live server owns the call's end; a lost link ends the call
   * `unknown`). Give a deadline, or cancel, to bound the wait.
   */
  deadline?: number;
  /** A relative deadline: the call may take this many milliseconds from now. Give it or `deadline`, not both. */
  timeoutMs?: number;
  /** Aborting it cancels the call: its outcome becomes `cancelled`. */
  signal?: AbortSignal;
  /** The activation whose budget the call shares, one of this session's `session.activation()`; a new one by default. */
  activation?: Activation;
  /** The model's id for this tool call, recorded on `tool_call_started` (the Agentloop sets it). */
  toolCallId?: string;
  /**
   * The W3C `traceparent` of the caller's span: the call's OpenTelemetry span
   * becomes its child. By default the span active where the call starts is the parent.
   */
  traceparent?: string;
}

const CALL_OPTIONS = allKeys<CallOptions>({
  deadline: true,
  timeoutMs: true,
  signal: true,
  activation: true,
  toolCallId: true,
  traceparent: true,
});

/** The options of a call given none. */
const NO_OPTIONS: CallOptions = Object.freeze({});

/** Epoch milliseconds before which a deadline must be a duration given by mistake (September 2001). */
const EARLIEST_DEADLINE = 1e12;
/** The latest time a `Date` can hold: a deadline past it is no time at all. */
const LATEST_DEADLINE = 8.64e15;
/** The longest model tool-call id or traceparent a call records. */
const MAX_ID_LENGTH = 512;

/**
 * The placed Tool a call names, by name or by the placement itself; throws
 * `unknown_tool` when this handle holds no handler for it.
 */
export function resolveTarget(
  sessionId: string,
  tools: ReadonlyMap<string, PlacedTool>,
  target: PlacedTool | string,
): PlacedTool {
  if (factoryImplementation(target)) {
    const { name } = target as unknown as { name: string };
    throw new BrainError(
      "unknown_tool",
      `call a Tool by its name or its placement, not its factory: session.call(${JSON.stringify(name)}, input)`,
    );
  }
  let name: unknown = target;
  let declaration: unknown;
  if (typeof target !== "string") {
    try {
      declaration = target?.tool;
      name = (declaration as { name?: unknown } | undefined)?.name;
    } catch {
      // A Proxy or getter that throws names no Tool.
      name = undefined;
    }
  }
  if (typeof name !== "string") {
    throw new BrainError(
      "unknown_tool",
      `call a Tool by its name (a string) or its placement, got ${shownValue(target)}: session.call("lookup", input)`,
    );
  }
  const placed = tools.get(name);
  if (!placed || (typeof target !== "string" && placed.tool !== declaration)) {
    const why = placed
      ? `the placement given is another one than the session's ${name}: call it by name, session.call(${
        JSON.stringify(name)
      }, input)`
      : tools.size === 0
      ? "this handle holds no Tools; open it with them, brain.sessions.get(id, { tools: [...] })"
      : `the Tools it holds are ${namesShown([...tools.keys()])}`;
    throw new BrainError("unknown_tool", `tool ${name} is not placed in session ${sessionId} with a handler: ${why}`);
  }
  return placed;
}

/** The first names of a list, and how many more there are. */
function namesShown(names: string[], shown = 20): string {
  const more = names.length - shown;
  return more > 0 ? `${names.slice(0, shown).join(", ")} and ${more} more` : names.join(", ");
}

/**
 * Checks a call's input and options before anything is committed: the input
 * as {@linkcode checkCallInput} keeps it, and the options with `timeoutMs`
 * turned into an absolute `deadline`. Throws `invalid_input` for input that is
 * not JSON and `invalid_argument` for an unknown option or a deadline that is
 * not an absolute time.
 */
export function checkCallArguments(
  tool: string,
  input: JsonValue,
  options: CallOptions = NO_OPTIONS,
): { input: JsonValue; options: CallOptions } {
  return { input: checkCallInput(tool, input).input, options: checkCallOptions(options) };
}

/**
 * A call's input as the call keeps it, and the UTF-8 size of its JSON text:
 * a deep-frozen copy made in the one read that checks it is JSON, so the
 * intent journaled and the input the Tool gets are the same whatever the
 * caller's object does next (a field set after the call, a getter that
 * answers differently). Throws `invalid_input` for input that is not JSON.
 */
export function checkCallInput(tool: string, input: JsonValue): { input: JsonValue; size: number } {
  const copied = frozenJsonSized(input);
  if (copied === undefined) {
    throw new BrainError("invalid_input", `tool ${tool}: input is not JSON: ${findNonJson(input)}`);
  }
  return { input: copied.copy, size: copied.size };
}

/**
 * {@linkcode checkCallArguments} for the options alone: read once into a plain copy (a getter or
 * Proxy that throws is `invalid_argument`), each checked before anything is committed.
 */
export function checkCallOptions(given: CallOptions = NO_OPTIONS): CallOptions {
  if (given === NO_OPTIONS) return given;
  const options = readOptions("call options", given, CALL_OPTIONS);
  checkText("traceparent", options.traceparent, "a W3C traceparent string");
  checkText("toolCallId", options.toolCallId, "the model's tool-call id");
  if (options.signal !== undefined && !isInstance(options.signal, AbortSignal)) {
    throw new BrainError("invalid_argument", "signal must be an AbortSignal");
  }
  if (options.activation !== undefined && !isInstance(options.activation, Activation)) {
    throw new BrainError("invalid_argument", "activation must be an Activation of this Brain");
  }
  const { timeoutMs, ...rest } = options;
  if (timeoutMs === undefined) {
    checkDeadline(rest.deadline);
    return rest;
  }
  if (rest.deadline !== undefined) {
    throw new BrainError("invalid_argument", "give a call either deadline (an absolute time) or timeoutMs, not both");
  }
  if (typeof timeoutMs !== "number" || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
    throw new BrainError(
      "invalid_argument",
      `timeoutMs must be a finite number of milliseconds, got ${shownValue(timeoutMs)}`,
    );
  }
  const deadline = Date.now() + timeoutMs;
  checkDeadline(deadline);
  return { ...rest, deadline };
}

function checkText(name: string, value: unknown, what: string): void {
  if (value === undefined || (typeof value === "string" && value.length > 0 && value.length <= MAX_ID_LENGTH)) return;
  throw new BrainError(
    "invalid_argument",
    `${name} must be ${what}, 1 to ${MAX_ID_LENGTH} characters, got ${
      typeof value === "string" ? `${value.length} characters` : `a ${typeof value}`
    }`,
  );
}

function checkDeadline(deadline: unknown): void {
  if (deadline === undefined) return;
  if (typeof deadline !== "number" || !Number.isFinite(deadline) || deadline > LATEST_DEADLINE) {
    throw new BrainError(
      "invalid_argument",
      `deadline must be a finite time in milliseconds since the epoch, such as Date.now() + 5_000, got ${
        shownValue(deadline)
      }`,
    );
  }
  if (deadline < EARLIEST_DEADLINE) {
    throw new BrainError(
      "invalid_argument",
      `deadline ${deadline} is a duration, not an absolute time: give { timeoutMs: ${deadline} } ` +
        `or { deadline: Date.now() + ${deadline} }`,
    );
  }
}
