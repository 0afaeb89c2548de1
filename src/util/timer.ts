import { BrainError } from "../outcome/errors.ts";

/** Largest delay `setTimeout` and `setInterval` honour; a longer one fires at once, over and over. */
export const MAX_TIMER_MS = 2 ** 31 - 1;
const MAX_DELAY = MAX_TIMER_MS;

/** Throws `invalid_argument` unless `value` is a positive number of milliseconds a timer can wait. */
export function checkTimerMs(what: string, value: unknown): number {
  if (typeof value === "number" && value > 0 && value <= MAX_TIMER_MS) return value;
  throw new BrainError("invalid_argument", `${what} must be a positive number of milliseconds up to ${MAX_TIMER_MS}`);
}

/** Callbacks due in one millisecond of the wall clock, in the order they were scheduled. */
type Bucket = Set<() => void>;

/**
 * Every pending {@linkcode callAt}, kept on one timer: callbacks are grouped by
 * the millisecond they are due in, and a single `setTimeout` is armed for the
 * earliest of them, so calls that come and go with deadlines (many at once,
 * each cancelled when the call ends) cost no timer each.
 */
const buckets = new Map<number, Bucket>();
/** The due times of the buckets, as a binary min-heap; a time whose bucket emptied is dropped when it surfaces. */
const times: number[] = [];
let timer: ReturnType<typeof setTimeout> | undefined;
/** The due time the timer is armed for. */
let armedFor = Infinity;

/**
 * Calls `callback` once at the absolute time `at` (milliseconds since the epoch),
 * never before it by the wall clock, also for times further away than `setTimeout`
 * can wait; at once for a time that has passed. Returns a cancel function.
 */
export function callAt(at: number, callback: () => void): () => void {
  if (!(at > Date.now())) {
    callback();
    return () => {};
  }
  const due = Math.ceil(at);
  let bucket = buckets.get(due);
  if (!bucket) {
    buckets.set(due, bucket = new Set());
    push(due);
  }
  // A callback scheduled twice is two entries: each gets its own wrapper.
  const entry = () => callback();
  bucket.add(entry);
  if (due < armedFor) arm();
  return () => {
    if (!bucket.delete(entry) || bucket.size > 0) return;
    if (buckets.get(due) === bucket) buckets.delete(due);
    if (due === armedFor) rearmSoon();
  };
}

let rearming = false;

/**
 * The timer follows the earliest pending callback, and is gone when none is:
 * checked once the current tick's work is done, so callbacks scheduled and
 * cancelled one after another in it (a call that starts and ends at once) arm no timer each.
 */
function rearmSoon(): void {
  if (rearming) return;
  rearming = true;
  queueMicrotask(() => {
    rearming = false;
    arm();
  });
}

/** Arms the timer for the earliest bucket still holding callbacks, or clears it when none does. */
function arm(): void {
  while (times.length > 0 && !buckets.has(times[0])) pop();
  const next = times.length > 0 ? times[0] : Infinity;
  if (next === armedFor && timer !== undefined) return;
  if (timer !== undefined) clearTimeout(timer);
  timer = undefined;
  armedFor = next;
  if (next === Infinity) return;
  timer = setTimeout(fire, Math.min(Math.max(next - Date.now(), 0), MAX_DELAY));
}

/** Calls every callback whose millisecond has come, earliest first, then arms for the next. */
function fire(): void {
  timer = undefined;
  armedFor = Infinity;
  const now = Date.now();
  while (times.length > 0 && times[0] <= now) {
    const due = pop();
    const bucket = buckets.get(due);
    if (!bucket) continue;
    buckets.delete(due);
    for (const entry of bucket) {
      try {
        entry();
      } catch (error) {
        // As a timer's own callback would: reported, and the others still called.
        reportError(error);
      }
    }
  }
  arm();
}

function push(time: number): void {
  let at = times.push(time) - 1;
  while (at > 0) {
    const parent = (at - 1) >> 1;
    if (times[parent] <= time) break;
    times[at] = times[parent];
    at = parent;
  }
  times[at] = time;
}

function pop(): number {
  const top = times[0];
  const last = times.pop()!;
  if (times.length > 0) {
    let at = 0;
    while (true) {
      const left = 2 * at + 1;
      if (left >= times.length) break;
      const child = left + 1 < times.length && times[left + 1] < times[left] ? left + 1 : left;
      if (times[child] >= last) break;
      times[at] = times[child];
      at = child;
    }
    times[at] = last;
  }
  return top;
}
