import { BrainError } from "../outcome/errors.ts";
import { findNonJson, type JsonValue } from "../outcome/json.ts";
import type { Descriptor } from "../tool/implementation.ts";
import { deepFreeze } from "../util/freeze.ts";
import { raceSignal } from "../util/signal.ts";
import type { AllowList } from "./allow_list.ts";
import { admitEnvironment } from "./bindings.ts";
import { brainEnv } from "./brain_env.ts";
import { type EnvironmentControl, type EnvironmentInfo, type EnvironmentSpec, refusedControl } from "./control.ts";
import type { Environment, EnvironmentOperation } from "./environment.ts";
import { httpEnv } from "./http_env.ts";

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
 */
export class SessionEnvironments {
  #sessionId: string;
  #allow: AllowList | undefined;
  #entries = new Map<string, Entry>();
  #ended = new AbortController();

  /** Built from a session's admitted bindings and their workspaces. */
  constructor(
    sessionId: string,
    bindings: Iterable<Environment>,
    workspaces: Map<string, string>,
    allow: AllowList | undefined,
  ) {
    this.#sessionId = sessionId;
    this.#allow = allow;
    for (const env of bindings) {
      this.#entries.set(env.name, { env, workspace: workspaces.get(env.name), created: false });
    }
  }

  /** Runs the binding's setup once, waiting at most until `signal` aborts; rejects with `setup_failed`. */
  prepare(name: string, signal: AbortSignal): Promise<void> {
    const entry = this.#entries.get(name);
    if (!entry?.env.setup) return Promise.resolve();
    entry.setup ??= this.#runSetup(entry);
    return raceSignal(entry.setup, signal);
  }

  /** `ctx.environments` for a call of a Tool placed in `caller`, bounded by the call's `signal`. */
  controlFor(caller: Environment | undefined, signal: AbortSignal): EnvironmentControl {
    const granted = new Set(caller?.control ?? []);
    if (granted.size === 0) {
      return refusedControl(
        caller ? `binding ${caller.name} grants no control` : "the Tool has no Environment binding",
      );
    }
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
      create: guard("create", (spec: EnvironmentSpec) => this.#create(spec)),
      update: guard("update", (name: string, spec: EnvironmentSpec) => this.#update(name, spec)),
      setup: guard("setup", (name: string) => {
        const entry = this.#entry(name);
        entry.setup = this.#runSetup(entry);
        return raceSignal(entry.setup, signal);
      }),
      delete: guard("delete", (name: string) => this.#delete(name)),
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
          `environment ${env.name}: setup failed: ${error instanceof Error ? error.message : String(error)}`,
          { details: { environment: env.name }, cause: error },
        );
      }
    })();
    running.catch(() => {});
    return running;
  }

  async #create(spec: EnvironmentSpec): Promise<EnvironmentInfo> {
    const env = fromSpec(spec);
    if (this.#entries.has(env.name)) {
      throw new BrainError("environment_exists", `session ${this.#sessionId} already has environment ${env.name}`);
    }
    const workspace = await admitEnvironment(this.#sessionId, env, this.#allow);
    const entry: Entry = { env, workspace, created: true };
    this.#entries.set(env.name, entry);
    return info(entry);
  }

  async #update(name: string, spec: EnvironmentSpec): Promise<EnvironmentInfo> {
    const entry = this.#created(name, "update");
    const env = fromSpec(spec);
    if (env.name !== name) throw new BrainError("invalid_argument", `updating ${name} cannot rename it to ${env.name}`);
    const workspace = await admitEnvironment(this.#sessionId, env, this.#allow);
    if (entry.workspace && entry.workspace !== workspace) await Deno.remove(entry.workspace, { recursive: true });
    const updated: Entry = { env, workspace, created: true };
    this.#entries.set(name, updated);
    return info(updated);
  }

  async #delete(name: string): Promise<void> {
    const entry = this.#created(name, "delete");
    this.#entries.delete(name);
    if (entry.workspace) await Deno.remove(entry.workspace, { recursive: true });
  }

  async #call(name: string, descriptor: Descriptor, input: JsonValue, signal: AbortSignal): Promise<JsonValue> {
    const { env } = this.#entry(name);
    if (!env.invoke) {
      throw new BrainError("unsupported_runtime", `environment ${name} (${env.kind}) cannot run descriptors directly`);
    }
    const nonJson = findNonJson(descriptor) ?? findNonJson(input);
    if (nonJson || typeof descriptor?.type !== "string") {
      throw new BrainError(
        "invalid_argument",
        `ctx.environments.call needs a JSON descriptor with a type and JSON input`,
      );
    }
    const frozen = deepFreeze(structuredClone(descriptor));
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

function fromSpec(spec: EnvironmentSpec): Environment {
  // Only the listed fields are read: a created Environment never carries control or a setup script.
  if (spec?.kind === "http") {
    const { name, baseUrl, headers } = spec;
    return httpEnv(defined({ name, baseUrl, headers }));
  }
  if (spec?.kind === "brain") {
    const { name, filesystem, net, env } = spec;
    return brainEnv(defined({ name, filesystem, net, env }));
  }
  throw new BrainError("invalid_argument", `an environment spec's kind must be "http" or "brain"`);
}

function defined<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as T;
}
