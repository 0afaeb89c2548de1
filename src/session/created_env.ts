import type { JournalRecord } from "../journal/records.ts";
import type { AllowList } from "../contract/grant.ts";
import { admitEnvironment } from "./bindings.ts";
import { BrainError } from "../outcome/errors.ts";
import { readOptions, readRecord } from "../outcome/known_keys.ts";
import type { JsonValue } from "../outcome/json.ts";
import { brainEnv } from "../env/brain_env.ts";
import type { EnvironmentSpec } from "../contract/control.ts";
import type { Environment } from "../contract/placement.ts";
import { httpEnv } from "../env/http_env.ts";

// `control` may be given and is ignored: a spec never grants control.
const HTTP_SPEC = ["kind", "name", "baseUrl", "headers", "control"];
const BRAIN_SPEC = ["kind", "name", "filesystem", "net", "env", "control"];

/** An Environment from a Tool's spec. Only the listed fields are read: it never carries control or a setup script. */
export function fromSpec(given: EnvironmentSpec): Environment {
  const spec = readRecord("an environment spec", given);
  if (spec.kind === "http") {
    const { name, baseUrl, headers } = readOptions("an http environment spec", spec, HTTP_SPEC);
    return httpEnv(defined({ name, baseUrl, headers }));
  }
  if (spec.kind === "brain") {
    const { name, filesystem, net, env } = readOptions("a brain environment spec", spec, BRAIN_SPEC);
    return brainEnv(defined({ name, filesystem, net, env }));
  }
  throw new BrainError("invalid_argument", `an environment spec's kind must be "http" or "brain"`);
}

/** A Tool-created Environment rebuilt from the journal, with its admitted workspace. */
export interface CreatedEnvironment {
  env: Environment;
  workspace: string | undefined;
}

/**
 * Rebuilds the Tool-created Environments a session's journal leaves standing and
 * admits each again against `allow`, as a placement binding is when a session
 * is reopened: a grant outside it fails with `permission_denied`.
 */
export async function restoreCreated(
  sessionId: string,
  records: readonly JournalRecord[],
  allow: AllowList | undefined,
): Promise<CreatedEnvironment[]> {
  const restored: CreatedEnvironment[] = [];
  for (const env of createdFromJournal(records)) {
    restored.push({ env, workspace: await admitEnvironment(sessionId, env, allow) });
  }
  return restored;
}

/**
 * The Tool-created Environments a session's journal leaves standing: each
 * `environment_created` / `environment_updated` / `environment_deleted` record
 * applied in sequence order.
 */
export function createdFromJournal(records: readonly JournalRecord[]): Environment[] {
  const created = new Map<string, Environment>();
  for (const record of records) {
    if (record.kind === "environment_created" || record.kind === "environment_updated") {
      created.delete(record.environment);
      created.set(record.environment, fromDescription(record.description));
    } else if (record.kind === "environment_deleted") created.delete(record.environment);
  }
  return [...created.values()];
}

/**
 * Rebuilds a created Environment from its journaled description. Header values
 * of an HTTP Environment are not journaled (they may be credentials), so a
 * rebuilt one that had headers refuses calls until a Tool updates it.
 */
function fromDescription(description: JsonValue): Environment {
  if (typeof description !== "object" || description === null || Array.isArray(description)) {
    throw new BrainError("journal_conflict", "a created environment's description is not a JSON object");
  }
  const { kind, name, baseUrl, headers, grant } = description;
  if (kind === "brain") return brainEnv({ name: name as string, ...(grant as object) });
  if (kind !== "http") throw new BrainError("journal_conflict", `a created environment of kind ${String(kind)}`);
  const env = httpEnv({ name: name as string, baseUrl: baseUrl as string });
  const missing = Array.isArray(headers) ? headers.map(String) : [];
  if (missing.length === 0) return env;
  return Object.freeze({
    ...env,
    describe: () => description,
    invoke: () =>
      Promise.reject(
        new BrainError(
          "permission_denied",
          `environment ${name}: its header values (${missing.join(", ")}) are not journaled; ` +
            `update it with ctx.environments.update to call it again`,
          { details: { environment: name, headers: missing } },
        ),
      ),
  });
}

function defined<T extends object>(fields: T): T {
  return Object.fromEntries(Object.entries(fields).filter(([, value]) => value !== undefined)) as T;
}
