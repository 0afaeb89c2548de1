import { readRecord } from "../outcome/known_keys.ts";
import { BrainError } from "../outcome/errors.ts";
import { shownValue } from "../util/shown_value.ts";
import { countedUuid } from "../util/counted_uuid.ts";

/** Default bytes a single activation may emit across all its Tools' results and events. */
export const BRAIN_MAX_EMITTED_BYTES = 1_048_576;

/** Default model calls a single activation may make, counting the Agentloop's turns and its Tools' `ctx.model` calls. */
export const BRAIN_MAX_MODEL_CALLS = 64;

/**
 * Raises `activation`'s counts to what a Brain server counted for it (a remote
 * call's usage, which the server charges): never lowers them, so frames that
 * arrive in any order leave the highest count.
 */
export let countedElsewhere: (
  activation: Activation,
  counted: { readonly emittedBytes: number; readonly modelCalls: number },
) => void;

/** The session each activation `session.activation()` gave out belongs to. */
const owners = new WeakMap<Activation, string>();

/** A new activation of session `sessionId` with `budgets`, as `session.activation()` gives it. */
export function sessionActivation(
  sessionId: string,
  budgets: { maxEmittedBytes?: number; maxModelCalls?: number },
): Activation {
  const activation = new Activation(budgets);
  owners.set(activation, sessionId);
  return activation;
}

/** Throws `invalid_argument` when `activation` is one another session gave out: its budgets are that session's. */
export function checkActivationOf(sessionId: string, activation: Activation | undefined): void {
  const owner = activation === undefined ? undefined : owners.get(activation);
  if (owner !== undefined && owner !== sessionId) {
    throw new BrainError(
      "invalid_argument",
      `this activation is session ${owner}'s; a call of session ${sessionId} takes one of its own session.activation()`,
    );
  }
}

/**
 * One activation of a session: the budgets its Tools' results, events and model
 * calls share. A Tool keeps the activation it was called in, also after
 * returning, so later activations never renew its budgets.
 *
 * Get one from `session.activation()` and pass it to calls that share its
 * budgets.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const echo = tool({
 *   name: "echo",
 *   description: "Echo the text.",
 *   input: z.object({ text: z.string() }),
 *   run: ({ text }, ctx) => ctx.finish(text),
 * });
 * await using brain = new Brain();
 * const session = await brain.sessions.create({ tools: [echo()] });
 * const activation = session.activation();
 * await session.call("echo", { text: "hi" }, { activation });
 * console.log(activation.emittedBytes > 0, activation.maxEmittedBytes); // true 1048576
 * ```
 */
export class Activation {
  static {
    countedElsewhere = (activation, { emittedBytes, modelCalls }) => {
      activation.#used = Math.max(activation.#used, emittedBytes);
      activation.#modelCalls = Math.max(activation.#modelCalls, modelCalls);
    };
  }

  /** Unique id, recorded on every `tool_call_started` it owns. */
  readonly id: string;
  /** The byte budget shared by results and events. */
  readonly maxEmittedBytes: number;
  /** The number of model calls shared by the Agentloop and the activation's Tools. */
  readonly maxModelCalls: number;
  #used = 0;
  #modelCalls = 0;

  /** Creates an activation with its own budgets. */
  constructor(options: {
    id?: string;
    maxEmittedBytes?: number;
    maxModelCalls?: number;
  } = {}) {
    const {
      id = countedUuid(),
      maxEmittedBytes = BRAIN_MAX_EMITTED_BYTES,
      maxModelCalls = BRAIN_MAX_MODEL_CALLS,
    } = readRecord("Activation options", options);
    if (typeof id !== "string" || id === "") {
      throw new BrainError("invalid_argument", "an activation id is a non-empty string");
    }
    checkLimit("maxEmittedBytes", maxEmittedBytes);
    checkLimit("maxModelCalls", maxModelCalls);
    this.id = id;
    this.maxEmittedBytes = maxEmittedBytes;
    this.maxModelCalls = maxModelCalls;
  }

  /** Model calls made so far. */
  get modelCalls(): number {
    return this.#modelCalls;
  }

  /** Takes one model call from the budget, or throws `budget_exceeded` and takes nothing. */
  chargeModelCall(): void {
    if (this.#modelCalls >= this.maxModelCalls) {
      throw new BrainError(
        "budget_exceeded",
        `this activation has used all ${this.maxModelCalls} of its model calls`,
      );
    }
    this.#modelCalls++;
  }

  /** Bytes emitted so far. */
  get emittedBytes(): number {
    return this.#used;
  }

  /** Takes `bytes` from the budget, or throws `budget_exceeded` and takes nothing. */
  charge(bytes: number): void {
    if (this.#used + bytes > this.maxEmittedBytes) {
      throw new BrainError(
        "budget_exceeded",
        `emitting ${bytes} bytes would exceed BRAIN_MAX_EMITTED_BYTES (${this.#used} of ${this.maxEmittedBytes} used)`,
      );
    }
    this.#used += bytes;
  }
}

function checkLimit(name: string, value: number): void {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new BrainError("invalid_argument", `${name} must be a non-negative integer, got ${shownValue(value)}`);
  }
}
