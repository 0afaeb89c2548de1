import { jsonOptions } from "../outcome/json_options.ts";
import { isBrainEnv } from "../env/brain_env.ts";
import { BrainError } from "../outcome/errors.ts";
import { isInstance, readOptions } from "../outcome/known_keys.ts";
import { findNonJson } from "../outcome/json.ts";
import { fail } from "../outcome/outcome.ts";
import type { Admission, BrainResources, Dispatch, Environment, Implementation } from "../contract/placement.ts";
import { parseInput } from "../run/host_tool.ts";
import { denoExecutable } from "./deno_child.ts";
import { DEFAULT_LOAD_LIMITS, loadComponentBytes } from "./load_bytes.ts";
import { componentPermissions } from "./permissions.ts";
import { permissionFlags } from "../env/grants.ts";
import type { SandboxSpec, TelemetryEntry } from "./sandbox.ts";
import { SandboxPools } from "./sandbox_pool.ts";
import { type Transpiled, transpiled } from "./transpiled.ts";
import { WASI_INTERFACES } from "./wasi/interfaces.ts";
import { deepFreeze } from "../util/freeze.ts";
import { shownValue } from "../util/shown_value.ts";

const COMPONENT_OPTIONS = ["telemetry", "maxBytes", "fetchTimeoutMs"];

/** Options of a {@linkcode Component}. */
export interface ComponentOptions {
  /**
   * Receives the Component's best-effort `telemetry` and what it prints to
   * stdout and stderr; it never enters saved history or model context. On a
   * remote Brain the Component runs on the server, which forwards each entry here.
   */
  telemetry?: (entry: TelemetryEntry) => void;
  /** Largest Component file accepted at admission, in bytes (default 64 MiB); past it admission fails with `payload_too_large`. */
  maxBytes?: number;
  /** How long fetching an `http:`/`https:` Component may take, in milliseconds (default 30 000); past it admission fails with `timeout`. */
  fetchTimeoutMs?: number;
}

type TelemetryListener = (entry: TelemetryEntry) => void;
let forwarded: (component: Component, listener: TelemetryListener) => Implementation;
let listenerOf: (component: Component) => TelemetryListener | undefined;

/**
 * `component` run with its telemetry going to `listener` instead of its own: a Brain
 * server runs a client's uploaded Component this way, forwarding each entry to that client.
 */
export function withTelemetry(component: Component, listener: TelemetryListener): Implementation {
  return forwarded(component, listener);
}

/** The `telemetry` listener `component` was made with, if any. */
export function telemetryListener(component: Component): TelemetryListener | undefined {
  return listenerOf(component);
}

/** Interfaces a sandbox gives a guest, without versions. */
const PROVIDED: ReadonlySet<string> = new Set(["brain:tool/host", ...WASI_INTERFACES]);
const EXPORT = "brain:tool/tool@0.2.0";
/** The key of a Brain's sandbox pools in its resources. */
const POOLS = { name: "component sandboxes" };
/** Stands for a placement without an Environment among the admitted specs. */
const NO_ENV = {};

/** An admitted placement's sandbox spec, and how many admissions of it are live. */
interface AdmittedSpec {
  spec: SandboxSpec;
  holders: number;
}

/**
 * A WebAssembly Component implementing a Tool against `brain:tool@0.2.0`
 * (`contracts/tool.wit`). Brain loads the file (read from a `file:` URL,
 * fetched from an `http:`/`https:` one, as a factory published to a registry
 * resolves `import.meta.url`) and transpiles it (in a child process, cached on
 * disk by content) when a session that places it is created.
 * Calls run in sandboxes: child Deno processes whose permissions are exactly
 * the placement's Brain Environment grant, killed at a call's deadline or
 * cancellation. The guest's WASI 0.2 is scoped to the grant: `wasi:http` and
 * `wasi:sockets` reach only its `net` allow-list, and a Component importing
 * them is admitted without one (every use then fails inside the guest).
 * The application needs `--allow-run` for the Deno executable.
 */
export class Component implements Implementation {
  /** Always `component`. */
  readonly kind = "component" as const;
  /** Where the Component file is read or fetched from. */
  readonly url: URL;
  #telemetry: ComponentOptions["telemetry"];
  #limits: { maxBytes: number; timeoutMs: number };
  #bytes: Promise<Uint8Array> | undefined;
  #transpiled = new Map<string, Transpiled>();
  /**
   * The spec of each admitted placement, by Brain, Environment and workspace,
   * made once from the grant its admission checked: a call runs under that
   * grant even if the Environment's grant object changes afterwards.
   */
  #admitted = new WeakMap<SandboxPools, WeakMap<object, Map<string | undefined, AdmittedSpec>>>();

  /**
   * Use {@linkcode component} to create one. A Brain server passes the `bytes`
   * a remote client uploaded; `url` then only names the Component.
   */
  constructor(url: URL, options: ComponentOptions = {}, bytes?: Uint8Array) {
    if (!isInstance(url, URL)) throw new BrainError("invalid_argument", "a Component needs a URL: use component(url)");
    if (bytes !== undefined && !isInstance(bytes, Uint8Array)) {
      throw new BrainError("invalid_argument", "a Component's bytes are a Uint8Array");
    }
    const { telemetry, maxBytes, fetchTimeoutMs } = readOptions("component() options", options, COMPONENT_OPTIONS);
    if (telemetry !== undefined && typeof telemetry !== "function") {
      throw new BrainError("invalid_argument", "component() option telemetry must be a function");
    }
    for (const [name, value] of [["maxBytes", maxBytes], ["fetchTimeoutMs", fetchTimeoutMs]] as const) {
      if (value !== undefined && !(Number.isSafeInteger(value) && value > 0)) {
        throw new BrainError(
          "invalid_argument",
          `component() option ${name} must be a positive integer, got ${shownValue(value)}`,
        );
      }
    }
    this.url = url;
    if (bytes) this.#bytes = Promise.resolve(bytes);
    this.#telemetry = telemetry;
    this.#limits = {
      maxBytes: maxBytes ?? DEFAULT_LOAD_LIMITS.maxBytes,
      timeoutMs: fetchTimeoutMs ?? DEFAULT_LOAD_LIMITS.timeoutMs,
    };
  }

  /**
   * Loads and transpiles the Component (once per cache folder), checks its
   * imports, and keeps a warm sandbox for this placement while the session lives.
   */
  async admit({ env, options, workspace, resources, ended }: Admission): Promise<void> {
    checkComponentEnv(this.url, env);
    checkComponentOptions(this.url, options);
    denoExecutable(`The Component ${this.url.href}`);
    const pools = sandboxPools(resources);
    let entry = this.#transpiled.get(pools.cacheDir);
    if (!entry) {
      entry = await transpiled(this.url, await this.load(), pools.cacheDir);
      this.#check(entry);
      this.#transpiled.set(pools.cacheDir, entry);
    }
    const admitted = this.#admit(pools, env, workspace, () => this.#spec(entry, pools, env, workspace));
    const unhold = pools.hold(admitted.spec);
    const release = () => {
      unhold();
      admitted.release();
    };
    if (ended?.aborted) release();
    else ended?.addEventListener("abort", release, { once: true });
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

  static {
    forwarded = (component, listener) => ({
      kind: "component",
      admit: (admission) => component.admit(admission),
      execute: (dispatch) => component.#execute(dispatch, listener),
    });
    listenerOf = (component) => component.#telemetry;
  }

  /** Runs one dispatched call in a sandbox of its placement. */
  execute(dispatch: Dispatch): void {
    this.#execute(dispatch, this.#telemetry);
  }

  #execute(dispatch: Dispatch, telemetry: TelemetryListener | undefined): void {
    this.#run(dispatch, telemetry).catch((error) => {
      if (dispatch.sink.signal.aborted) return;
      const code = error instanceof BrainError ? error.code : "tool_error";
      return dispatch.sink.finish({ outcome: fail(code, (error as Error).message) }, "error");
    }).catch(() => {});
  }

  async #run(dispatch: Dispatch, telemetry: TelemetryListener | undefined): Promise<void> {
    const { sink, invocation, tool } = dispatch;
    const pools = sandboxPools(dispatch.resources);
    const spec = this.#admittedSpec(pools, dispatch.env, dispatch.workspace);
    if (!spec) throw new BrainError("unsupported_runtime", `the Component ${this.url.href} was not admitted`);
    if (sink.signal.aborted) return;
    const parsed = await parseInput(tool, invocation, sink);
    if (!parsed || sink.signal.aborted) return;
    const nonJson = findNonJson(parsed.value);
    if (nonJson) {
      await sink.finish({ outcome: fail("invalid_input", `parsed input is not JSON: ${nonJson}`) }, "error");
      return;
    }
    let sandbox;
    try {
      sandbox = await pools.acquire(spec, sink.signal);
    } catch (error) {
      if (sink.signal.aborted) return;
      throw error;
    }
    let reusable = false;
    try {
      reusable = await sandbox.run(dispatch, parsed.value, telemetry);
    } finally {
      pools.release(sandbox, reusable);
    }
  }

  /**
   * Keeps the placement's spec, made now by `spec` (frozen) unless a live admission of it kept one; returns it and
   * the release of this admission.
   */
  #admit(
    pools: SandboxPools,
    env: Environment | undefined,
    workspace: string | undefined,
    spec: () => SandboxSpec,
  ): { spec: SandboxSpec; release: () => void } {
    let byEnv = this.#admitted.get(pools);
    if (!byEnv) this.#admitted.set(pools, byEnv = new WeakMap());
    let byWorkspace = byEnv.get(env ?? NO_ENV);
    if (!byWorkspace) byEnv.set(env ?? NO_ENV, byWorkspace = new Map());
    let admitted = byWorkspace.get(workspace);
    if (!admitted) byWorkspace.set(workspace, admitted = { spec: deepFreeze(spec()), holders: 0 });
    admitted.holders++;
    let released = false;
    return {
      spec: admitted.spec,
      release: () => {
        if (released) return;
        released = true;
        if (--admitted.holders === 0) byWorkspace.delete(workspace);
      },
    };
  }

  #admittedSpec(
    pools: SandboxPools,
    env: Environment | undefined,
    workspace: string | undefined,
  ): SandboxSpec | undefined {
    return this.#admitted.get(pools)?.get(env ?? NO_ENV)?.get(workspace)?.spec;
  }

  #check({ meta }: Transpiled): void {
    const missing = meta.imports.filter((name) => !PROVIDED.has(name));
    if (missing.length > 0) {
      throw new BrainError(
        "unsupported_runtime",
        `the Component ${this.url.href} imports ${missing.join(", ")}, which a Brain sandbox does not provide`,
        { details: { missing } },
      );
    }
    if (!meta.exports.includes(EXPORT)) {
      throw new BrainError("invalid_tool", `the Component ${this.url.href} does not export ${EXPORT}`);
    }
  }

  #spec(
    { dir, meta }: Transpiled,
    pools: SandboxPools,
    env: Environment | undefined,
    workspace: string | undefined,
  ): SandboxSpec {
    const permissions = componentPermissions(env, workspace, dir);
    const grant = isBrainEnv(env) ? env.grant : {};
    const { memoryMb } = pools.limits;
    return {
      key: JSON.stringify([dir, permissions, memoryMb]),
      memoryMb,
      flags: permissionFlags(permissions),
      init: {
        type: "init",
        glue: `${dir}/${meta.glue}`,
        modules: Object.fromEntries(meta.modules.map((name) => [name, `${dir}/${name}`])),
        workspace: grant.filesystem ? workspace : undefined,
        write: grant.filesystem?.workspace === "write" && workspace !== undefined,
        env: [...(grant.env ?? [])],
        net: [...(grant.net ?? [])],
        memoryBytes: memoryMb * 1024 * 1024,
        permissions,
      },
    };
  }
}

function sandboxPools(resources: BrainResources | undefined): SandboxPools {
  if (!resources) throw new BrainError("unsupported_runtime", "a Component runs only in a Brain's session");
  return resources.keep(POOLS, (settings) => new SandboxPools(settings));
}

/** Throws `unsupported_runtime` when `env` is not a brainEnv: a Component runs only in Brain's own sandbox. */
export function checkComponentEnv(url: URL, env: Environment | undefined): void {
  if (env && !isBrainEnv(env)) {
    throw new BrainError(
      "unsupported_runtime",
      `the Component ${url.href} runs only in a brainEnv; environment ${env.name} is ${env.kind}`,
    );
  }
}

/**
 * Throws `invalid_options` when a placement's parsed options are not JSON (undefined properties aside, which JSON
 * drops): the guest receives them as JSON text, so a BigInt, NaN or a Date would fail or change on the way.
 */
export function checkComponentOptions(url: URL, options: Readonly<Record<string, unknown>>): void {
  const json = jsonOptions(options);
  if ("nonJson" in json) {
    throw new BrainError(
      "invalid_options",
      `the Component ${url.href} receives its placement's options as JSON, and ${json.nonJson}`,
    );
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
  let parsed: URL | undefined;
  try {
    // A lone surrogate would name another file (U+FFFD) than the one meant.
    if (isInstance(url, URL) || (typeof url === "string" && url.isWellFormed())) parsed = new URL(url);
  } catch {
    // Not an absolute URL: refused below.
  }
  if (!parsed) {
    throw new BrainError("invalid_argument", `component() needs an absolute URL, got ${shownValue(url)}`);
  }
  return new Component(parsed, options);
}
