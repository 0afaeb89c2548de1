import { BrainError } from "../outcome/errors.ts";
import { sameText } from "../util/same_text.ts";
import { checkName } from "../util/names.ts";
import { checkToken } from "../util/tokens.ts";

/** A registered host's identity and secret token, as an application supplies them. */
export interface HostCredentials {
  /** Stable identity of the registered host, such as the application's name. */
  id: string;
  /** The host's secret; Brain stores only its {@linkcode hashToken} hash. */
  token: string;
}

/** A registered host as a journal stores it: the identity and the token's hash, never the token. */
export interface HostRegistration {
  /** The host's identity. */
  id: string;
  /** `sha-256:` and the lowercase hex SHA-256 of the token's UTF-8 bytes. */
  tokenHash: string;
}

/**
 * Hashes a host token with SHA-256. Tokens are random secrets, so a plain
 * digest keeps them unrecoverable from a stolen journal.
 *
 * @example
 * ```ts
 * import { hashToken } from "@aexhq/brain/server";
 * console.log(await hashToken("secret")); // "sha-256:2bb80d53..."
 * ```
 */
export async function hashToken(token: string): Promise<string> {
  if (typeof token !== "string") throw new BrainError("invalid_argument", "a token must be a string");
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(token));
  return `sha-256:${new Uint8Array(digest).toHex()}`;
}

/** Checks credentials' shape and turns them into the registration a journal stores. */
export async function registerHost(host: HostCredentials): Promise<HostRegistration> {
  checkName("a host id", host?.id);
  checkToken(`the token of host ${host.id}`, host.token);
  return { id: host.id, tokenHash: await hashToken(host.token) };
}

/**
 * Throws `unauthorized` unless `host` is the registered host with its token.
 * The message never contains the token.
 */
export async function verifyHost(
  sessionId: string,
  registered: HostRegistration | undefined,
  host: HostCredentials | undefined,
): Promise<void> {
  if (!registered) {
    if (host) throw new BrainError("unauthorized", `session ${sessionId} has no registered host; ${host.id} is not it`);
    return;
  }
  if (!host) {
    throw new BrainError("unauthorized", `session ${sessionId} belongs to host ${registered.id}; give its credentials`);
  }
  const { tokenHash } = await registerHost(host);
  if (host.id !== registered.id || !sameText(tokenHash, registered.tokenHash)) {
    throw new BrainError("unauthorized", `session ${sessionId}: host ${host.id} or its token does not match`);
  }
}
