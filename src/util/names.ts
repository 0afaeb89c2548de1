import { BrainError } from "../outcome/errors.ts";

/** The longest Environment, binding, session or host id Brain accepts. */
export const MAX_NAME_LENGTH = 128;

const NAME = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/**
 * True when `value` is a name that cannot be a path: letters, digits, `-`, `_`
 * and `.`, never starting with a dot (so never `.` or `..`), at most
 * {@linkcode MAX_NAME_LENGTH} characters.
 */
export function isName(value: unknown): value is string {
  return typeof value === "string" && value.length <= MAX_NAME_LENGTH && NAME.test(value);
}

/** Returns `value` when {@linkcode isName} holds; otherwise throws `invalid_argument` naming `what` it was for. */
export function checkName(what: string, value: unknown): string {
  if (isName(value)) return value;
  const shown = typeof value === "string" ? JSON.stringify(value.slice(0, 64)) : typeof value;
  throw new BrainError(
    "invalid_argument",
    `${what} must be 1 to ${MAX_NAME_LENGTH} letters, digits, "-", "_" or "." not starting with ".", got ${shown}`,
    { details: { what } },
  );
}

/** Separates a host id from its own session id in a Brain server's journal key; never part of a name. */
const HOST_SCOPE = "~";

/**
 * The journal key of host `host`'s session `session` on a Brain server,
 * `host~session`: each host has its own session ids, so two hosts' `x` are two
 * sessions and no answer to one host depends on another's. `~` is never part of
 * a name, so a key never equals a plain session id and names its host unambiguously.
 * Throws `invalid_argument` unless both are names.
 */
export function hostSessionKey(host: string, session: string): string {
  return `${checkName("a host id", host)}${HOST_SCOPE}${checkName("a session id", session)}`;
}

/** The session id host `host` knows the journal key `key` by: `key` without its `host~` prefix, else `key` itself. */
export function hostSessionId(host: string, key: string): string {
  return key.startsWith(`${host}${HOST_SCOPE}`) ? key.slice(host.length + HOST_SCOPE.length) : key;
}

/** True when `key` is a journal key {@linkcode hostSessionKey} made for host `host`. */
export function isHostSessionKey(host: string, key: string): boolean {
  return key.startsWith(`${host}${HOST_SCOPE}`);
}

/**
 * Returns `value` when it is a session id a journal keeps: a name, or a
 * {@linkcode hostSessionKey}; otherwise throws `invalid_argument`. Neither can be a path.
 */
export function checkSessionId(value: unknown): string {
  if (typeof value === "string") {
    const scope = value.indexOf(HOST_SCOPE);
    if (scope < 0) return checkName("a session id", value);
    if (isName(value.slice(0, scope)) && isName(value.slice(scope + HOST_SCOPE.length))) return value;
  }
  return checkName("a session id", value);
}
