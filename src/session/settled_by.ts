import { BrainError } from "../outcome/errors.ts";
import { callAt } from "../util/timer.ts";

/** How long after a call's deadline its caller waits for the journal to confirm the call's end. */
export const END_GRACE_MS = 1_000;

/** Which call a caller waits for: its number once its intent committed, else its Tool. */
export interface Awaited {
  sessionId: string;
  tool: string;
  call?: number;
}

/**
 * The caller's view of a call's end: `ended` itself, or, for a call with a
 * deadline whose end the journal has not confirmed {@linkcode END_GRACE_MS}
 * after it, or after now for a deadline already past (a store that is full, failing or unreachable, even before the
 * call's intent committed), a rejection `storage_unavailable` then. The call's
 * own commits go on trying; its records say how it ended (a call whose intent
 * commits after its deadline ends `timeout` without a dispatch).
 */
export function settledBy<T>(ended: Promise<T>, deadline: number | undefined, awaited: Awaited): Promise<T> {
  if (deadline === undefined) return ended;
  const { promise, resolve, reject } = Promise.withResolvers<T>();
  const disarm = callAt(Math.max(deadline, Date.now()) + END_GRACE_MS, () => {
    const { sessionId, tool, call } = awaited;
    reject(
      new BrainError(
        "storage_unavailable",
        `${call === undefined ? `a call of ${tool}` : `call ${call}`} of session ${sessionId}: the journal did not ` +
          `confirm its ${call === undefined ? "start" : "end"} within ${END_GRACE_MS} ms of its deadline; its ` +
          "records say how it ended",
      ),
    );
  });
  ended.then((end) => (disarm(), resolve(end)), (error) => (disarm(), reject(error)));
  return promise;
}
