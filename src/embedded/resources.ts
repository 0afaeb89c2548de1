import type { BrainResources, ComponentSettings } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import { shownValue } from "../util/shown_value.ts";
import { isGrantablePath } from "../util/grantable_path.ts";

const NUMBERS = ["memoryMb", "maxSandboxes", "maxQueuedCalls", "warm"] as const;

/** Throws `invalid_argument` unless every number in `settings` is a positive integer and `cacheDir` a non-empty path. */
export function checkComponentSettings(settings: ComponentSettings): Readonly<ComponentSettings> {
  for (const name of NUMBERS) {
    const value = settings[name];
    if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
      throw new BrainError(
        "invalid_argument",
        `components.${name} must be a positive integer, got ${shownValue(value)}`,
      );
    }
  }
  const { cacheDir } = settings;
  if (cacheDir !== undefined && !isGrantablePath(cacheDir)) {
    throw new BrainError(
      "invalid_argument",
      "components.cacheDir must be a non-empty path without NUL, lone surrogates or commas (sandboxes are granted it)",
    );
  }
  return Object.freeze({ ...settings });
}

/** The values an embedded Brain keeps for its implementations; {@linkcode BrainResources.keep} makes them. */
export class Resources implements BrainResources {
  #settings: Readonly<ComponentSettings>;
  #kept = new Map<object, AsyncDisposable>();
  #closed = false;

  constructor(settings: ComponentSettings = {}) {
    this.#settings = checkComponentSettings(settings);
  }

  keep<T extends AsyncDisposable>(key: object, create: (settings: Readonly<ComponentSettings>) => T): T {
    if (this.#closed) throw new BrainError("session_closed", "this Brain is closed");
    let value = this.#kept.get(key);
    if (!value) this.#kept.set(key, value = create(this.#settings));
    return value as T;
  }

  /** Disposes every kept value; nothing can be kept afterwards. */
  async close(): Promise<void> {
    this.#closed = true;
    await Promise.allSettled([...this.#kept.values()].map((value) => value[Symbol.asyncDispose]()));
    this.#kept.clear();
  }
}
