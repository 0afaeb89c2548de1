import { BrainError } from "../outcome/errors.ts";

/** Default bytes a single activation may emit across all its Tools' results and events. */
export const BRAIN_MAX_EMITTED_BYTES = 1_048_576;

/**
 * One activation of a session: the budget its Tools' results and events share.
 * A Tool keeps the activation it was called in, also after returning, so later
 * activations never renew its budget.
 *
 * @example
 * ```ts
 * import { Activation } from "@aexhq/brain";
 * const activation = new Activation({ maxEmittedBytes: 10 });
 * activation.charge(4);
 * console.log(activation.emittedBytes); // 4
 * ```
 */
export class Activation {
  /** Unique id, recorded on every `tool_call_started` it owns. */
  readonly id: string;
  /** The byte budget shared by results and events. */
  readonly maxEmittedBytes: number;
  #used = 0;

  /** Creates an activation with its own budget. */
  constructor({ id = crypto.randomUUID(), maxEmittedBytes = BRAIN_MAX_EMITTED_BYTES }: {
    id?: string;
    maxEmittedBytes?: number;
  } = {}) {
    if (!Number.isSafeInteger(maxEmittedBytes) || maxEmittedBytes < 0) {
      throw new BrainError(
        "invalid_argument",
        `maxEmittedBytes must be a non-negative integer, got ${maxEmittedBytes}`,
      );
    }
    this.id = id;
    this.maxEmittedBytes = maxEmittedBytes;
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
