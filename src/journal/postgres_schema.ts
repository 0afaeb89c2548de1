import postgres from "postgres";
import { paused } from "../util/paused.ts";

/** The channel every commit is announced on, with the session id as payload. */
export const CHANNEL = "brain_commit";

/**
 * The database function that makes one commit, named with its version: a
 * change of its parameters or results gets a new name, so processes of the
 * old version keep committing through theirs while a cluster upgrades.
 */
export const COMMIT_FUNCTION = "brain_commit_v2";

/** The commit function of processes of the previous version: the current one, for a commit that is never sent again. */
const COMMIT_FUNCTION_V1 = "brain_commit_v1";

/** The SQLSTATE the commit function fails with when a record ends a call that is not open. */
export const CALL_NOT_OPEN = "BR001";

/** The function that creates a session, counted under its host (versioned as {@linkcode COMMIT_FUNCTION}). */
export const CREATE_FUNCTION = "brain_create_v1";

/** The SQLSTATE the create function fails with when the session's host has its most sessions. */
export const HOST_FULL = "BR002";

/** The host id a session's metadata names (a string), in SQL over its `meta` column. */
export const META_HOST =
  `CASE WHEN json_typeof(meta::json -> 'host' -> 'id') = 'string' THEN meta::json -> 'host' ->> 'id' END`;

/** Serializes schema creation between journals opening one database at once. */
const SCHEMA_LOCK = 7_245_001;

/**
 * How long a statement of the schema script waits for a table lock before the
 * script gives up and is run again later. An upgrade's `ALTER TABLE` or
 * `CREATE INDEX` waits behind every transaction using its table, and the
 * commits of running processes queue behind it meanwhile: a transaction left
 * open elsewhere would otherwise stop every commit for as long as it stays open.
 */
const SCHEMA_LOCK_WAIT_MS = 100;
/** How long opening tries to create the schema before failing, while its tables stay busy. */
const SCHEMA_TRIES_MS = 30_000;
/** The longest pause between two tries. */
const SCHEMA_PAUSE_MAX_MS = 2_000;
/** SQLSTATEs of a try that waited too long for a lock (`lock_not_available`) or met a deadlock. */
const LOCK_REFUSALS = new Set(["55P03", "40P01"]);

/**
 * Creates what of the journal's schema is missing (see {@linkcode schemaScript}),
 * running the script again, after a growing pause, while a lock it needs stays
 * taken; fails with the database's error after {@linkcode SCHEMA_TRIES_MS}.
 */
export async function createSchema(sql: postgres.Sql, schema: string): Promise<void> {
  const until = Date.now() + SCHEMA_TRIES_MS;
  for (let attempt = 0;; attempt++) {
    try {
      await sql.unsafe(schemaScript(schema));
      return;
    } catch (error) {
      const code = (error as { code?: unknown } | null)?.code;
      if (!(error instanceof postgres.PostgresError && LOCK_REFUSALS.has(code as string)) || Date.now() >= until) {
        throw error;
      }
    }
    await paused(Math.min(SCHEMA_PAUSE_MAX_MS, 50 * 2 ** attempt) * (0.5 + Math.random() / 2));
  }
}

/**
 * The script that creates whatever of the journal's schema is missing and
 * (re)creates the create and commit functions, as one implicit transaction of the simple
 * query protocol: one statement of the driver, never a transaction it holds
 * open across round trips. `schema` is a checked lower-case name.
 *
 * The commit function advances the session's head where the writer's fence
 * still holds (its lease's owner and token, or no live lease by the database's
 * clock for a lease-less append), checks the calls the records end, inserts the
 * records, opens and ends calls and announces the commit, all in the one
 * statement that calls it. A refused commit changes nothing and returns the
 * session's lease holder instead of a first sequence (no holder: no session).
 * `p_closes[i]` is a call a record ends, `p_closers[i]` that record's offset in
 * the commit, `p_opens` the offsets of the records that open a call.
 * `p_commit` names the commit, kept on its first record: a commit sent again
 * (`p_resend`) after its answer was lost first waits for the first sending's
 * transaction to end (the session's row lock), and answers where that one
 * landed if it did, committing nothing twice; else it commits as sent.
 *
 * The create function inserts a session unless its id is taken (`created`
 * false) and counts it under its host, failing {@linkcode HOST_FULL} (and
 * inserting nothing) when the host has `p_max` sessions; the count's row lock
 * orders creations of one host across every process.
 */
export function schemaScript(schema: string): string {
  return `
SELECT pg_advisory_xact_lock(${SCHEMA_LOCK});
SELECT set_config('lock_timeout', '${SCHEMA_LOCK_WAIT_MS}ms', true);
CREATE SCHEMA IF NOT EXISTS "${schema}";
CREATE TABLE IF NOT EXISTS brain_sessions (
  id text PRIMARY KEY,
  meta text NOT NULL,
  head bigint NOT NULL DEFAULT 0,
  owner text NOT NULL DEFAULT '',
  token bigint NOT NULL DEFAULT 0,
  expires_at bigint NOT NULL DEFAULT 0
);
-- One sequence numbers every lease and every incarnation of a session: a session deleted and created
-- again never reissues a token or an epoch of the old one.
CREATE SEQUENCE IF NOT EXISTS brain_tokens;
-- ALTER TABLE and CREATE INDEX lock their table even when there is nothing to do, waiting for every commit and read
-- in flight while holding the other tables' locks: deadlock. They run only when their column or index is missing.
DO $epoch$ BEGIN
  IF NOT ${hasColumn("brain_sessions", "epoch")} THEN
    ALTER TABLE brain_sessions ADD COLUMN epoch bigint NOT NULL DEFAULT 0;
  END IF;
  IF to_regclass('brain_sessions_leased') IS NULL THEN
    CREATE INDEX brain_sessions_leased ON brain_sessions (expires_at) WHERE expires_at > 0;
  END IF;
END $epoch$;
CREATE TABLE IF NOT EXISTS brain_nodes (
  node text PRIMARY KEY,
  url text NOT NULL,
  expires_at bigint NOT NULL
);
-- Sessions per host, kept by the create function and the delete; counted from the sessions when first created.
DO $hosts$ BEGIN
  IF to_regclass('brain_host_sessions') IS NULL THEN
    CREATE TABLE brain_host_sessions (host text PRIMARY KEY, sessions bigint NOT NULL);
    INSERT INTO brain_host_sessions (host, sessions)
      SELECT host, count(*) FROM (SELECT ${META_HOST} AS host FROM brain_sessions) s WHERE host IS NOT NULL GROUP BY host;
  END IF;
END $hosts$;
CREATE TABLE IF NOT EXISTS brain_records (
  session_id text NOT NULL,
  sequence bigint NOT NULL,
  body text NOT NULL,
  at bigint NOT NULL,
  PRIMARY KEY (session_id, sequence)
);
DO $commit_id$ BEGIN
  IF NOT ${hasColumn("brain_records", "commit_id")} THEN
    ALTER TABLE brain_records ADD COLUMN commit_id text;
  END IF;
END $commit_id$;
CREATE TABLE IF NOT EXISTS brain_open_calls (
  session_id text NOT NULL,
  call bigint NOT NULL,
  PRIMARY KEY (session_id, call)
);
CREATE OR REPLACE FUNCTION "${schema}".${CREATE_FUNCTION}(
  p_id text, p_meta text, p_host text, p_max bigint, OUT created boolean
) LANGUAGE plpgsql AS $create$
BEGIN
  INSERT INTO brain_sessions (id, meta, epoch) VALUES (p_id, p_meta, nextval('brain_tokens')) ON CONFLICT (id) DO NOTHING;
  created := FOUND;
  IF NOT created OR p_host IS NULL THEN
    RETURN;
  END IF;
  INSERT INTO brain_host_sessions AS h (host, sessions) VALUES (p_host, 1)
    ON CONFLICT (host) DO UPDATE SET sessions = h.sessions + 1 WHERE p_max IS NULL OR h.sessions < p_max;
  IF NOT FOUND THEN
    RAISE EXCEPTION USING ERRCODE = '${HOST_FULL}', MESSAGE = format('host %s has %s sessions, its most', p_host, p_max);
  END IF;
END
$create$;
CREATE OR REPLACE FUNCTION "${schema}".${COMMIT_FUNCTION}(
  p_session text, p_owner text, p_token bigint, p_commit text, p_resend boolean, p_bodies json, p_at bigint,
  p_opens bigint[], p_closes bigint[], p_closers bigint[],
  OUT first_sequence bigint, OUT holder text, OUT holder_expires_at bigint
) LANGUAGE plpgsql AS $commit$
DECLARE
  v_count bigint := json_array_length(p_bodies);
  v_head bigint;
  v_open bigint[] := p_opens;
  v_ended bigint[] := '{}';
  v_offset bigint;
  v_removed bigint;
BEGIN
  IF p_resend THEN
    PERFORM 1 FROM brain_sessions WHERE id = p_session FOR UPDATE;
    -- Searched from the head down: a commit that landed is among the last.
    SELECT r.sequence INTO first_sequence FROM brain_records r
      WHERE r.session_id = p_session AND r.commit_id = p_commit ORDER BY r.sequence DESC LIMIT 1;
    IF FOUND THEN
      RETURN;
    END IF;
  END IF;
  IF p_owner IS NULL THEN
    UPDATE brain_sessions SET head = head + v_count
      WHERE id = p_session AND expires_at <= (extract(epoch from clock_timestamp()) * 1000)::bigint
      RETURNING head INTO v_head;
  ELSE
    UPDATE brain_sessions SET head = head + v_count
      WHERE id = p_session AND owner = p_owner AND token = p_token
      RETURNING head INTO v_head;
  END IF;
  IF NOT FOUND THEN
    SELECT owner, expires_at INTO holder, holder_expires_at FROM brain_sessions WHERE id = p_session;
    RETURN;
  END IF;
  first_sequence := v_head - v_count + 1;
  FOR i IN 1 .. coalesce(array_length(p_closes, 1), 0) LOOP
    v_offset := p_closes[i] - first_sequence;
    IF v_offset < 0 THEN
      v_ended := v_ended || p_closes[i];
    ELSIF v_offset < p_closers[i] AND v_offset = ANY (v_open) THEN
      v_open := array_remove(v_open, v_offset);
    ELSE
      RAISE EXCEPTION USING ERRCODE = '${CALL_NOT_OPEN}',
        MESSAGE = format('session %s: call %s is not open', p_session, p_closes[i]);
    END IF;
  END LOOP;
  IF cardinality(v_ended) > 0 THEN
    DELETE FROM brain_open_calls WHERE session_id = p_session AND call = ANY (v_ended);
    GET DIAGNOSTICS v_removed = ROW_COUNT;
    IF v_removed <> cardinality(v_ended) THEN
      RAISE EXCEPTION USING ERRCODE = '${CALL_NOT_OPEN}',
        MESSAGE = format('session %s: a call this append ends is not open', p_session);
    END IF;
  END IF;
  INSERT INTO brain_records (session_id, sequence, body, at, commit_id)
    SELECT p_session, first_sequence + b.ordinality - 1, b.body, p_at, CASE WHEN b.ordinality = 1 THEN p_commit END
    FROM json_array_elements_text(p_bodies) WITH ORDINALITY AS b(body, ordinality);
  INSERT INTO brain_open_calls (session_id, call) SELECT p_session, first_sequence + o FROM unnest(v_open) AS o;
  PERFORM pg_notify('${CHANNEL}', p_session);
END
$commit$;
CREATE OR REPLACE FUNCTION "${schema}".${COMMIT_FUNCTION_V1}(
  p_session text, p_owner text, p_token bigint, p_bodies json, p_at bigint,
  p_opens bigint[], p_closes bigint[], p_closers bigint[],
  OUT first_sequence bigint, OUT holder text, OUT holder_expires_at bigint
) LANGUAGE sql AS $commit_v1$
  SELECT * FROM "${schema}".${COMMIT_FUNCTION}(p_session, p_owner, p_token, NULL, false, p_bodies, p_at,
    p_opens, p_closes, p_closers)
$commit_v1$;
`;
}

/** SQL that is true when table `table` of the schema on the search path has column `column`; it locks nothing. */
function hasColumn(table: string, column: string): string {
  return `EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass('${table}') AND attname = '${column}'
    AND NOT attisdropped)`;
}
