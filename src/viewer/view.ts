/**
 * `deno task view --path FILE`: the journal viewer over the Deno KV journal at
 * FILE, or with `--journal postgres://user@host:port/db` (and `--schema`) over
 * a PostgreSQL journal, on 127.0.0.1 (`--port`, 8788 by default, 0 picks a free
 * one). It only reads: it never owns, recovers or changes a session, so it may
 * run beside the Brain that writes the journal and follows its commits live.
 *
 * The operator token is `--token`, else `BRAIN_SERVER_TOKEN`, else a random
 * one; it prints `Brain viewer on URL`, a link whose fragment (never sent to a
 * server) signs the browser in, and stops on SIGINT or SIGTERM.
 */
import { parseArgs } from "node:util";
import type { Journal } from "../journal/journal.ts";
import { KvJournal } from "../journal/kv.ts";
import { isPostgresUrl } from "../journal/postgres_url.ts";
import { BrainError } from "../outcome/errors.ts";
import { createViewer } from "./viewer.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    path: { type: "string" },
    journal: { type: "string" },
    schema: { type: "string" },
    port: { type: "string" },
    token: { type: "string" },
  },
});
try {
  await main();
} catch (error) {
  if (!(error instanceof BrainError)) throw error;
  console.error(`brain view: ${error.message}`);
  Deno.exit(2);
}

/** Opens the journal without recovering it, serves the viewer and stops on a signal. */
async function main(): Promise<void> {
  const port = Number(values.port ?? "8788");
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new BrainError("invalid_argument", `the port must be an integer from 0 to 65535, got ${values.port}`);
  }
  const journal = await openJournal();
  const operatorToken = values.token ?? (Deno.env.get("BRAIN_SERVER_TOKEN") || crypto.randomUUID());
  const viewer = createViewer(journal, { operatorToken });
  const server = Deno.serve({ hostname: "127.0.0.1", port, onListen: () => {} }, viewer.fetch);
  console.log(
    `Brain viewer on http://${server.addr.hostname}:${server.addr.port}/viewer/#token=${
      encodeURIComponent(operatorToken)
    }`,
  );
  const stop = async () => {
    await journal.close();
    await server.shutdown();
    Deno.exit(0);
  };
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
}

/** The journal the flags name, opened without recovering anything. */
async function openJournal(): Promise<Journal> {
  const { path, journal: url, schema } = values;
  if ((path === undefined) === (url === undefined)) {
    throw new BrainError("invalid_argument", "name one journal: --path FILE or --journal postgres://...");
  }
  if (url !== undefined) {
    if (!isPostgresUrl(url)) throw new BrainError("invalid_argument", `--journal takes a postgres:// URL, got ${url}`);
    const { PostgresJournal } = await import("../journal/postgres.ts");
    return await PostgresJournal.open(url, schema === undefined ? {} : { schema });
  }
  // Deno KV would create a missing file: a viewer must never make a journal.
  const found = await Deno.stat(path!).then((info) => info.isFile, () => false);
  if (!found) throw new BrainError("invalid_argument", `no journal file at ${path}`);
  return await KvJournal.open(path!);
}
