import { hashToken } from "../embedded/host_token.ts";
import { isToken } from "../util/tokens.ts";
import { sameText } from "../util/same_text.ts";
import type { SessionMeta } from "../journal/records.ts";

/** Who a viewer request speaks for: the operator, who sees every session, or one registered host, which sees its own. */
export type Principal = { kind: "operator" } | { kind: "host"; id: string; tokenHash: string };

/** The cookie a browser keeps its viewer credential in, so `EventSource` (which sends no headers) is authorized too. */
export const VIEWER_COOKIE = "brain_viewer";

/**
 * Decides who a request speaks for and what it may see. A request authorizes
 * with `Authorization: Bearer OPERATOR_TOKEN`, with `Authorization: Basic`
 * of `HOST_ID:HOST_TOKEN`, or with the {@linkcode VIEWER_COOKIE} holding one
 * of those header values.
 */
export class ViewerAccess {
  #operatorHash: Promise<string> | undefined;

  /** Without `operatorToken` only hosts' credentials are accepted. */
  constructor(operatorToken: string | undefined) {
    this.#operatorHash = operatorToken === undefined ? undefined : hashToken(operatorToken);
  }

  /** The principal a request's credential names, or undefined when it has none or a wrong one. */
  principal(request: Request): Promise<Principal | undefined> {
    return this.authenticate(request.headers.get("authorization") ?? cookie(request, VIEWER_COOKIE));
  }

  /** The principal an `Authorization` header value names, or undefined when it is missing, malformed or wrong. */
  async authenticate(authorization: string | undefined | null): Promise<Principal | undefined> {
    const space = authorization?.indexOf(" ") ?? -1;
    if (!authorization || space < 0) return undefined;
    const scheme = authorization.slice(0, space);
    const value = authorization.slice(space + 1);
    if (!value) return undefined;
    if (scheme === "Bearer") {
      if (!this.#operatorHash || !isToken(value)) return undefined;
      return sameText(await hashToken(value), await this.#operatorHash) ? { kind: "operator" } : undefined;
    }
    if (scheme !== "Basic") return undefined;
    const pair = decodeBase64(value);
    const colon = pair?.indexOf(":") ?? -1;
    if (!pair || colon < 1 || !isToken(pair.slice(colon + 1))) return undefined;
    return { kind: "host", id: pair.slice(0, colon), tokenHash: await hashToken(pair.slice(colon + 1)) };
  }
}

/** True when `principal` may see the session `meta` describes: the operator sees all, a host only those placed in it. */
export function sees(principal: Principal, meta: SessionMeta): boolean {
  if (principal.kind === "operator") return true;
  return meta.host?.id === principal.id && sameText(meta.host.tokenHash, principal.tokenHash);
}

function cookie(request: Request, name: string): string | undefined {
  for (const part of request.headers.get("cookie")?.split(";") ?? []) {
    const [key, ...value] = part.trim().split("=");
    if (key !== name) continue;
    try {
      return decodeURIComponent(value.join("="));
    } catch {
      return undefined;
    }
  }
  return undefined;
}

function decodeBase64(text: string): string | undefined {
  try {
    return new TextDecoder("utf-8", { fatal: true }).decode(Uint8Array.from(atob(text), (char) => char.charCodeAt(0)));
  } catch {
    return undefined;
  }
}
