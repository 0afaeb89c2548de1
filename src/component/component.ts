import { isBrainEnv } from "../env/brain_env.ts";
import { BrainError } from "../outcome/errors.ts";
import type { Admission, Dispatch, Implementation } from "../contract/placement.ts";
import { DEFAULT_LOAD_LIMITS, loadComponentBytes } from "./load_bytes.ts";
import { componentPermissions } from "./permissions.ts";
import { probeWorker, runInWorker, type TelemetryEntry } from "./run_worker.ts";
import { prepareComponent, type Prepared } from "./transpile.ts";

/** Options of a {@linkcode Component}. */
export interface ComponentOptions {
  /** Receives the Component's best-effort `telemetry`; it never enters saved history or model context. */
  telemetry?: (entry: TelemetryEntry) => void;
  /** Largest Component file accepted at admission, in bytes (default 64 MiB); past it admission fails with `payload_too_large`. */
  maxBytes?: number;
  /** How long fetching an `http:`/`https:` Component may take, in milliseconds (default 30 000); past it admission fails with `timeout`. */
  fetchTimeoutMs?: number;
}

/**
 * A WebAssembly Component implementing a Tool against `brain:tool@0.2.0`
 * (`contracts/tool.wit`). Brain loads the file (read from a `file:` URL,
 * fetched from an `http:`/`https:` one, as a factory published to a registry
 * resolves `import.meta.url`) and transpiles it when a session that places it
 * is created; a successful admission is cached on this object, a failed one is
 * retried by the next session.
 * Each invocation runs in its own Worker whose Deno permissions are exactly
 * the placement's Brain Environment grant.
 */
export class Component implements Implementation {
  /** Always `component`. */
  readonly kind = "component" as const;
  /** Where the Component file is read or fetched from. */
  readonly url: URL;
  #telemetry: ComponentOptions["telemetry"];
  #limits: { maxBytes: number; timeoutMs: number };
  #prepared: Promise<Prepared> | undefined;
  #ready: Prepared | undefined;
  #admitted = new Map<string, Promise<void>>();
  #bytes: Promise<Uint8Array> | undefined;

  /**
   * Use {@linkcode component} to create one. A Brain server passes the `bytes`
   * a remote client uploaded; `url` then only names the Component.
   */
  constructor(url: URL, options: ComponentOptions = {}, bytes?: Uint8Array) {
    this.url = url;
    if (bytes) this.#bytes = Promise.resolve(bytes);
    this.#telemetry = options.telemetry;
    this.#limits = {
      maxBytes: options.maxBytes ?? DEFAULT_LOAD_LIMITS.maxBytes,
      timeoutMs: options.fetchTimeoutMs ?? DEFAULT_LOAD_LIMITS.timeoutMs,
    };
  }

  /** Loads, transpiles and compiles the Component (once), then checks the Worker permissions for this placement. */
  async admit({ env, workspace }: Admission): Promise<void> {
    if (env && !isBrainEnv(env)) {
      throw new BrainError(
        "unsupported_runtime",
        `the Component ${this.url.href} runs only in a brainEnv; environment ${env.name} is ${env.kind}`,
      );
    }
    this.#ready = await this.#prepare();
    const permissions = componentPermissions(env, workspace);
    const key = JSON.stringify(permissions);
    let admitted = this.#admitted.get(key);
    if (!admitted) {
      admitted = probeWorker(permissions).then((mismatch) => {
        if (mismatch) {
          throw new BrainError("unsupported_runtime", `cannot run the Component ${this.url.href}: ${mismatch}`, {
            details: { permissions: key },
          });
        }
      });
      this.#admitted.set(key, admitted);
      admitted.catch(() => this.#admitted.delete(key));
    }
    await admitted;
  }

  /**
   * Reads or fetches the Component's bytes within its limits (once: a success is
   * kept, a failure is retried next time); admission and a remote Brain's upload use them.
   */
  load(): Promise<Uint8Array> {
    if (!this.#bytes) {
      this.#bytes = loadComponentBytes(this.url, this.#limits);
      this.#bytes.catch(() => (this.#bytes = undefined));
    }
    return this.#bytes;
  }

  /** Runs one dispatched call in a fresh Worker. */
  execute(dispatch: Dispatch): void {
    const prepared = this.#ready;
    if (!prepared) throw new BrainError("unsupported_runtime", `the Component ${this.url.href} was not admitted`);
    const permissions = componentPermissions(dispatch.env, dispatch.workspace);
    runInWorker(prepared, permissions, dispatch, this.#telemetry).catch((error) =>
      dispatch.sink.finish({
        outcome: { status: "error", error: { code: "tool_error", message: (error as Error).message } },
      }, "error")
    );
  }

  #prepare(): Promise<Prepared> {
    if (!this.#prepared) {
      this.#prepared = this.load().then((bytes) => prepareComponent(this.url, bytes));
      this.#prepared.catch(() => (this.#prepared = undefined));
    }
    return this.#prepared;
  }
}

/**
 * Declares a Component implementation for {@linkcode tool}. The file is read
 * (`file:`) or fetched (`http:`, `https:`) when a session is created, not now.
 *
 * @example
 * ```ts
 * import { brainEnv, component, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * export const inspect = tool({
 *   name: "inspect",
 *   description: "Inspect one path.",
 *   input: z.object({ path: z.string() }),
 *   options: z.object({ depth: z.number().int().positive() }),
 *   implementation: component(new URL("./inspect.wasm", import.meta.url)),
 * });
 *
 * const placed = inspect({ env: brainEnv({ name: "reader", filesystem: { workspace: "read" } }), depth: 2 });
 * ```
 */
export function component(url: URL | string, options: ComponentOptions = {}): Component {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new BrainError("invalid_argument", `component() needs an absolute URL, got ${JSON.stringify(String(url))}`);
  }
  for (const name of ["maxBytes", "fetchTimeoutMs"] as const) {
    const value = options[name];
    if (value !== undefined && !(Number.isFinite(value) && value > 0)) {
      throw new BrainError("invalid_argument", `component() option ${name} must be a positive number, got ${value}`);
    }
  }
  return new Component(parsed, options);
}
