import assert from "node:assert/strict";
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { startPostgres } from "../_support/postgres.ts";
import { denoScript } from "../_support/deno_script.ts";
import { nextRecord, serverEvents } from "./sse.ts";

Deno.test({
  name: "deno task view --journal serves a PostgreSQL journal read-only and follows another writer's commits",
  async fn() {
    await using pg = await startPostgres();
    const schema = `t_${crypto.randomUUID().replaceAll("-", "")}`;
    const writer = await PostgresJournal.open(pg.url, { schema });
    await writer.createSession({ id: "s", createdAt: 1, tools: [] });
    await writer.append("s", [{ kind: "tool_call_started", tool: "t", input: {}, activation: "a" }]);
    const view = denoScript(
      "src/viewer/view.ts",
      ["--journal", pg.url, "--schema", schema, "--port", "0", "--token", "operator"],
      { permissions: ["--allow-net=127.0.0.1", "--allow-env=BRAIN_SERVER_TOKEN,PG*", "--allow-read=."] },
    );
    try {
      const origin = /^Brain viewer on (http:\/\/127\.0\.0\.1:\d+)\/viewer\/#token=operator$/.exec(
        await view.line() ?? "",
      )?.[1];
      assert.ok(origin, "it printed its link");
      const headers = { authorization: "Bearer operator" };
      const summary = await (await fetch(`${origin}/v1/sessions/s`, { headers })).json();
      assert.deepEqual(summary.openCalls, [1], "the open call stays open: nothing recovers it");
      const stream = await fetch(`${origin}/v1/sessions/s/stream?from=2`, { headers });
      const events = serverEvents(stream.body!);
      await writer.append("s", [{ kind: "user_message", content: "from the writer" }]);
      assert.equal((await nextRecord(events)).record.content, "from the writer");
      await events.return(undefined);
      assert.equal(await writer.head("s"), 2, "the viewer wrote nothing");
    } finally {
      assert.equal((await view.kill("SIGTERM")).code, 0);
      await writer.close();
    }
  },
});
