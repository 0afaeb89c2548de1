import type { JournalRecord, RecordBody } from "../journal/records.ts";
import { errorText } from "../util/error_text.ts";
import { BrainError } from "../outcome/errors.ts";
import { findNonJson, frozenJson, type JsonValue } from "../outcome/json.ts";
import { fail, ok, type Outcome } from "../outcome/outcome.ts";
import type { Descriptor } from "../contract/grant.ts";
import { raceSignal } from "../util/signal.ts";
import type { AllowList } from "../contract/grant.ts";
import { admitEnvironment } from "./bindings.ts";
import { removeWorkspace } from "./workspaces.ts";
import {
  type EnvironmentControl,
  type EnvironmentInfo,
  type EnvironmentSpec,
  refusedControl,
} from "../contract/control.ts";
import { type CreatedEnvironment, fromSpec } from "./created_env.ts";
import type { Environment } from "../contract/placement.ts";
import type { EnvironmentOperation } from "../contract/grant.ts";

/** Commits records in order with the rest of one Tool call's records; resolves once they are committed. */
export type CallRecorder = (bodies: RecordBody[]) => Promise<JournalRecord[]>;

interface Entry {
  env: Environment;
  workspace: string | undefined;
  created: boolean;
  setup?: Promise<void>;
}

/**
 * Brain's side of one session's Environments: the admitted placement bindings
 * plus those Tools created, each binding's setup (run once, never retried
 * automatically), and `ctx.environments` as each binding's `control` allows it.
 * Each create, update, delete and setup commits its record through the calling
 * Tool call before it takes effect here, so a reopened session rebuilds the
 * created Environments from the journal.
 */
export class SessionEnvironments {
  #sessionId: string;
  #allow: AllowList | undefined;
  #entries = new Map<string, Entry>();
  #ended = new AbortController();
  /** Creates, updates and deletes run one at a time, so their records commit in the order they take effect. */
  #changes: Promise<unknown> = Promise.resolve();
  #refusedControls = new Map<string, EnvironmentControl>();

  /** Built from a session's admitted bindings and their workspaces, and the created Environments its journal keeps. */
  constructor(
    sessionId: string,
    bindings: Iterable<Environment>,
    workspaces: Map<string, string>,
    allow: AllowList | undefined,
    created: Iterable<CreatedEnvironment> = [],
  ) {
    this.#sessionId = sessionId;
    this.#allow = allow;
    for (const env of bindings) {
      this.#entries.set(env.name, { env, workspace: workspaces.get(env.name), created: false });
    }
    for (const { env, workspace } of created) {
      if (!this.#entries.has(env.name)) this.#entries.set(env.name, { env, workspace, created: true });
    }
  }

  /** Runs the binding's setup once, waiting at most until `signal` aborts; rejects with `setup_failed`. */
  prepare(name: string, signal: AbortSignal): Promise<void> {
    const entry = this.#entries.get(name);
    if (!entry?.env.setup) return Promise.resolve();
    entry.setup ??= this.#runSetup(entry);
    return raceSignal(entry.setup, signal);
  }

  /** The control of Tools placed in `caller` when it grants none, built once per binding: most calls have it. */
  #refused(caller: Environment | undefined): EnvironmentControl {
    const key = caller?.name ?? "";
    let refused = this.#refusedControls.get(key);
    if (!refused) {
      refused = refusedControl(
        caller ? `binding ${caller.name} grants no control` : "the Tool has no Environment binding",
      );
      this.#refusedControls.set(key, refused);
    }
    return refused;
  }

  /**
   * `ctx.environments` for call `call` of a Tool placed in `caller`, bounded by
   * the call's `signal`; `recorder.record` commits its changes with the call's records.
   */
  controlFor(
    caller: Environment | undefined,
    signal: AbortSignal,
    call: number,
    recorder: { record: CallRecorder },
  ): EnvironmentControl {
    if (!caller?.control?.length) return this.#refused(caller);
    const record: CallRecorder = (bodies) => recorder.record(bodies);
    const granted = new Set(caller.control);
    const guard =
      <A extends unknown[], R>(operation: EnvironmentOperation, run: (...args: A) => Promise<R>) =>
      async (...args: A): Promise<R> => {
        if (!granted.has(operation)) {
          throw new BrainError(
            "permission_denied",
            `binding ${caller!.name} does not grant ctx.environments.${operation}`,
            {
              details: { operation, environment: caller!.name },
            },
          );
        }
        return await run(...args);
      };
    return Object.freeze({
      list: guard("list", () => Promise.resolve([...this.#entries.values()].map(info))),
      get: guard("get", (name: string) => Promise.resolve(info(this.#entry(name)))),
      create: guard("create", (spec: EnvironmentSpec) => {
        const held = heldSpec(spec);
        return this.#change(() => this.#create(held, call, record));
      }),
      update: guard("update", (name: string, spec: EnvironmentSpec) => {
        const held = heldSpec(spec);
        return this.#change(() => this.#update(name, held, call, record));
      }),
      setup: guard("setup", (name: string) => {
        const entry = this.#entry(name);
        entry.setup = this.#runSetup(entry);
        return raceSignal(this.#recordSetup(name, entry.setup, call, record), signal);
      }),
      delete: guard("delete", (name: string) => this.#change(() => this.#delete(name, call, record))),
      call: guard(
        "call",
        (name: string, descriptor: Descriptor, input: JsonValue) => this.#call(name, descriptor, input, signal),
      ),
    });
  }

  /** Aborts running setup scripts; the session has ended. */
  close(): void {
    this.#ended.abort(new BrainError("session_closed", `session ${this.#sessionId} has ended`));
  }

  #entry(name: string): Entry {
    if (typeof name !== "string") {
      throw new BrainError("invalid_argument", `an Environment name is a string, got a ${typeof name}`);
    }
    const entry = this.#entries.get(name);
    if (!entry) {
      throw new BrainError("environment_not_found", `session ${this.#sessionId} has no environment ${name}`, {
        details: { environment: name },
      });
    }
    return entry;
  }

  #runSetup({ env, workspace }: Entry): Promise<void> {
    const running = (async () => {
      try {
        await env.setup?.({ name: env.name, workspace, signal: this.#ended.signal });
      } catch (error) {
        throw new BrainError(
          "setup_failed",
          `environment ${env.name}: setup failed: ${errorText(error)}`,
          { details: { environment: env.name }, cause: error },
        );
      }
    })();
    running.catch(() => {});
    return running;
  }

  /** Runs `change` after every earlier create, update and delete of the session has settled. */
  #change<T>(change: () => Promise<T>): Promise<T> {
    const changed = this.#changes.then(change);
    this.#changes = changed.catch(() => {});
    return changed;
  }

  async #create(spec: EnvironmentSpec, call: number, record: CallRecorder): Promise<EnvironmentInfo> {
    const env = fromSpec(spec);
    if (this.#entries.has(env.name)) {
      throw new BrainError("environment_exists", `session ${this.#sessionId} already has environment ${env.name}`);
    }
    const workspace = await admitEnvironment(this.#sessionId, env, this.#allow);
    await record([{ kind: "environment_created", call, environment: env.name, description: env.describe() }]);
    const entry: Entry = { env, workspace, created: true };
    this.#entries.set(env.name, entry);
    return info(entry);
  }

  async #update(name: string, spec: EnvironmentSpec, call: number, record: CallRecorder): Promise<EnvironmentInfo> {
    const entry = this.#created(name, "update");
    const env = fromSpec(spec);
    if (env.name !== name) throw new BrainError("invalid_argument", `updating ${name} cannot rename it to ${env.name}`);
    const workspace = await admitEnvironment(this.#sessionId, env, this.#allow);
    await record([{ kind: "environment_updated", call, environment: name, description: env.describe() }]);
    const updated: Entry = { env, workspace, created: true };
    this.#entries.set(name, updated);
    if (entry.workspace && entry.workspace !== workspace) {
      await removeWorkspace(this.#allow!.workspaceRoot!, entry.workspace);
    }
    return info(updated);
  }

  async #delete(name: string, call: number, record: CallRecorder): Promise<void> {
    const entry = this.#created(name, "delete");
    await record([{ kind: "environment_deleted", call, environment: name }]);
    this.#entries.delete(name);
    if (entry.workspace) await removeWorkspace(this.#allow!.workspaceRoot!, entry.workspace);
  }

  /** Commits the setup's outcome once it settles, then settles as the setup did. */
  async #recordSetup(name: string, setup: Promise<void>, call: number, record: CallRecorder): Promise<void> {
    let outcome: Outcome = ok(null);
    try {
      await setup;
    } catch (error) {
      outcome = fail("setup_failed", (error as Error).message);
    }
    await record([{ kind: "environment_setup", call, environment: name, outcome }]);
    await setup;
  }

  async #call(name: string, descriptor: Descriptor, input: JsonValue, signal: AbortSignal): Promise<JsonValue> {
    const { env } = this.#entry(name);
    if (!env.invoke) {
      throw new BrainError("unsupported_runtime", `environment ${name} (${env.kind}) cannot run descriptors directly`);
    }
    // Frozen copies, checked: a getter or Proxy of the Tool's never runs again.
    const frozen = frozenJson(descriptor) as Descriptor | undefined;
    if (frozen === undefined || typeof frozen.type !== "string" || findNonJson(input) !== undefined) {
      throw new BrainError(
        "invalid_argument",
        `ctx.environments.call needs a JSON descriptor with a type and JSON input`,
      );
    }
    env.checkDescriptor?.(frozen, `ctx.environments.call(${name})`);
    await this.prepare(name, signal);
    return await env.invoke(frozen, input, signal);
  }

  #created(name: string, operation: EnvironmentOperation): Entry {
    const entry = this.#entry(name);
    if (!entry.created) {
      throw new BrainError(
        "permission_denied",
        `environment ${name} is a placement binding; only environments created by ctx.environments can ${operation}`,
        { details: { operation, environment: name } },
      );
    }
    return entry;
  }
}

function info({ env, created }: Entry): EnvironmentInfo {
  return { name: env.name, kind: env.kind, description: env.describe(), created };
}

/**
 * `spec` as a change waiting for the ones before it keeps it: a frozen copy, so
 * what is created is what the Tool passed, not what its object holds by then.
 * A spec that is not JSON is kept as it is, for `fromSpec` to refuse.
 */
function heldSpec(spec: EnvironmentSpec): EnvironmentSpec {
  return (frozenJson(spec) as EnvironmentSpec | undefined) ?? spec;
}
