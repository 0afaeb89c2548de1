import { Hono } from "hono";
import { checkToken } from "../util/tokens.ts";
import { sameText } from "../util/same_text.ts";
import { SavedHosts } from "../journal/saved_hosts.ts";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { BrainError, type BrainErrorCode } from "../outcome/errors.ts";
import { type Principal, sees, VIEWER_COOKIE, ViewerAccess } from "./access.ts";
import { pageAsset } from "./page_assets.ts";
import type { ReadableJournal } from "./readable_journal.ts";
import { recordEvents } from "./record_events.ts";
import { sessionSummary } from "./session_summary.ts";
import { hostSessionId, hostSessionKey, isName } from "../util/names.ts";
import { integerParameter, pageSessions, pageSize, RECORD_PAGE_SIZE, SESSION_PAGE_SIZE } from "./session_page.ts";

/** Options for a journal viewer. */
export interface ViewerOptions {
  /**
   * The operator's secret: `Authorization: Bearer TOKEN` sees every session.
   * Without it only hosts see sessions, each those placed in it
   * (`Authorization: Basic` of `HOST_ID:HOST_TOKEN`).
   */
  operatorToken?: string;
}

const VIEWER_OPTIONS = allKeys<ViewerOptions>({ operatorToken: true });

/** A journal viewer: its read API and web page as one `fetch` handler. */
export interface Viewer {
  /** Answers viewer requests; serve it with `Deno.serve(viewer.fetch)`. */
  readonly fetch: (request: Request) => Response | Promise<Response>;
}

const STATUS: Partial<Record<BrainErrorCode, 400 | 401 | 404>> = {
  invalid_argument: 400,
  unauthorized: 401,
  session_not_found: 404,
};

/**
 * A read-only viewer of `journal`: it only reads, so it never owns, recovers or
 * changes a session. The page is at `/viewer/`; the API answers JSON:
 *
 * - `GET /v1/sessions?limit=&cursor=`: `{ sessions, next? }`, newest first
 * - `GET /v1/sessions/ID`: the session's summary and `openCalls` (sequences)
 * - `GET /v1/sessions/ID/records?from=&limit=`: `{ records, next? }`
 * - `GET /v1/sessions/ID/stream?from=`: Server-Sent Events, resumable with `Last-Event-ID`
 * - `GET /v1/viewer/me`: who the credential speaks for, `{ kind: "operator" }` or `{ kind: "host", id }`
 * - `POST /v1/viewer/login` with a credential header keeps it in an HttpOnly cookie; `POST /v1/viewer/logout` drops it
 *
 * A session the credential may not see answers exactly as one that does not exist.
 *
 * @example
 * ```ts
 * import { MemoryJournal } from "@aexhq/brain/journal";
 * import { createViewer } from "./viewer.ts";
 * const viewer = createViewer(new MemoryJournal(), { operatorToken: "secret" });
 * const response = await viewer.fetch(
 *   new Request("http://localhost/v1/sessions", { headers: { authorization: "Bearer secret" } }),
 * );
 * console.log(await response.json()); // { sessions: [] }
 * ```
 */
export function createViewer(journal: ReadableJournal, options: ViewerOptions = {}): Viewer {
  const app = viewerRoutes(journal, options);
  return { fetch: app.fetch };
}

/** The viewer's routes as a hono app, for a server that mounts them beside its own. */
export function viewerRoutes(journal: ReadableJournal, options: ViewerOptions = {}): Hono {
  const { operatorToken } = readOptions("viewer options", options, VIEWER_OPTIONS);
  if (operatorToken !== undefined) checkToken("operatorToken", operatorToken);
  const access = new ViewerAccess(operatorToken);
  const savedHosts = new SavedHosts(journal);
  const app = new Hono();

  const principal = async (request: Request): Promise<Principal> => {
    const found = await access.principal(request);
    if (!found) throw new BrainError("unauthorized", "give an operator token or a host's id and token");
    return found;
  };
  /** The session `id` names for the request's principal (a host names its own), and the id it knows it by. */
  const visible = async (request: Request, id: string) => {
    const who = await principal(request);
    const scoped = who.kind === "host" && isName(who.id) && isName(id) ? hostSessionKey(who.id, id) : undefined;
    const meta = (scoped === undefined ? undefined : await journal.getSession(scoped)) ?? await journal.getSession(id);
    if (!meta || !sees(who, meta)) throw new BrainError("session_not_found", `no session ${id}`);
    return { meta, shown: shownId(who, meta.id) };
  };

  app.onError((error) => {
    if (!(error instanceof BrainError)) throw error;
    return Response.json({ error: { code: error.code, message: error.message } }, {
      status: STATUS[error.code] ?? 500,
      headers: error.code === "unauthorized" ? { "www-authenticate": 'Bearer realm="brain"' } : {},
    });
  });

  // As a Brain server answers: JSON with a code, never hono's text.
  app.notFound((c) =>
    Response.json({
      error: {
        code: "invalid_argument",
        message: `no route ${c.req.method} ${new URL(c.req.url).pathname.slice(0, 256)}`,
      },
    }, { status: 404 })
  );

  app.get("/", (c) => c.redirect("/viewer/"));
  app.get("/viewer", (c) => c.redirect("/viewer/"));
  app.get("/viewer/:asset{.*}", (c) => pageAsset(c.req.param("asset")));

  app.post("/v1/viewer/login", async (c) => {
    const authorization = c.req.header("authorization");
    const who = await access.authenticate(authorization);
    if (!who || !authorization) throw new BrainError("unauthorized", "wrong or missing credentials");
    const secure = new URL(c.req.url).protocol === "https:" ? "; Secure" : "";
    c.header(
      "set-cookie",
      `${VIEWER_COOKIE}=${encodeURIComponent(authorization)}; Path=/; HttpOnly; SameSite=Strict${secure}`,
    );
    return c.json(describe(who));
  });
  app.get("/v1/viewer/me", async (c) => c.json(describe(await principal(c.req.raw))));
  app.post("/v1/viewer/logout", (c) => {
    c.header("set-cookie", `${VIEWER_COOKIE}=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0`);
    return c.json({ ok: true });
  });

  app.get("/v1/sessions", async (c) => {
    const who = await principal(c.req.raw);
    const limit = pageSize(c.req.query("limit"), SESSION_PAGE_SIZE);
    // A host no session names, or named with another token, has nothing to list: no journal scan for its request.
    if (who.kind === "host" && !sameText(await savedHosts.tokenHash(who.id) ?? "", who.tokenHash)) {
      return c.json({ sessions: [] });
    }
    const mine = (await journal.listSessions()).filter((meta) => sees(who, meta));
    const { sessions, next } = pageSessions(mine, limit, c.req.query("cursor"));
    const summaries = await Promise.all(
      sessions.map(async (meta) => ({
        ...sessionSummary(meta, await journal.head(meta.id)),
        id: shownId(who, meta.id),
      })),
    );
    return c.json(next === undefined ? { sessions: summaries } : { sessions: summaries, next });
  });

  app.get("/v1/sessions/:id", async (c) => {
    const { meta, shown } = await visible(c.req.raw, c.req.param("id"));
    const [head, open] = await Promise.all([journal.head(meta.id), journal.openCalls(meta.id)]);
    return c.json({ ...sessionSummary(meta, head), id: shown, openCalls: open.map((record) => record.sequence) });
  });

  app.get("/v1/sessions/:id/records", async (c) => {
    const from = integerParameter("from", c.req.query("from"), 1, Number.MAX_SAFE_INTEGER) ?? 1;
    const limit = pageSize(c.req.query("limit"), RECORD_PAGE_SIZE);
    const { meta, shown } = await visible(c.req.raw, c.req.param("id"));
    const [read, head] = await Promise.all([journal.read(meta.id, { from, limit }), journal.head(meta.id)]);
    const records = read.map((record) => ({ ...record, sessionId: shown }));
    const last = records.at(-1)?.sequence ?? head;
    return c.json(last < head ? { records, next: last + 1 } : { records });
  });

  app.get("/v1/sessions/:id/stream", async (c) => {
    const seen = integerParameter("Last-Event-ID", c.req.header("last-event-id"), 0, Number.MAX_SAFE_INTEGER);
    const from = seen === undefined
      ? integerParameter("from", c.req.query("from"), 1, Number.MAX_SAFE_INTEGER) ?? 1
      : seen + 1;
    const { meta, shown } = await visible(c.req.raw, c.req.param("id"));
    return recordEvents(journal, meta.id, from, shown);
  });

  return app;
}

/** The id `who` knows the session keyed `key` by: a host its own id, the operator the journal's key. */
function shownId(who: Principal, key: string): string {
  return who.kind === "host" ? hostSessionId(who.id, key) : key;
}

function describe(who: Principal): { kind: "operator" } | { kind: "host"; id: string } {
  return who.kind === "host" ? { kind: "host", id: who.id } : { kind: "operator" };
}
