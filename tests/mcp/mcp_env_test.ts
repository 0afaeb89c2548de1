import assert from "node:assert/strict";
import { Client } from "@modelcontextprotocol/sdk/client";
// @ts-types="@modelcontextprotocol/sdk/client/stdio"
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { Brain, hostEnv, type Outcome } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { mcpEnv } from "../../src/mcp/mod.ts";
import { ofKind, until } from "../_support/until.ts";
import {
  counting,
  countingAllow,
  DENO,
  EVERYTHING,
  everything,
  EVERYTHING_ALLOW,
  EVERYTHING_ENV,
} from "../_support/mcp_servers.ts";
import { hasCode } from "../_support/has_code.ts";

/** The body of each record (no session, sequence or time), for comparing whole records. */
function bodies(records: JournalRecord[]) {
  return records.map(({ sessionId: _, sequence: __, at: ___, ...body }) => body);
}

/** The lines the counting server's `log` tool returned. */
function logLines(outcome: Outcome): string[] {
  assert.equal(outcome.status, "ok");
  return (outcome as unknown as { value: { lines: string[] } }).value.lines;
}

/** The records of the call started at `call`, in journal order (without the Agentloop's messages about it). */
function callRecords(records: JournalRecord[], call: number): JournalRecord[] {
  return records.filter((record) =>
    record.sequence === call || ("call" in record && record.call === call && !record.kind.endsWith("_message"))
  );
}

Deno.test("mcpEnv places server-everything's tools with the JSON Schemas the server lists", async () => {
  const bare = new Client({ name: "bare", version: "1" });
  await bare.connect(
    new StdioClientTransport({
      command: DENO,
      args: ["run", "--no-prompt", `--allow-env=${EVERYTHING_ENV.join(",")}`, EVERYTHING, "stdio"],
      stderr: "ignore",
    }),
  );
  const listed = (await bare.listTools()).tools;
  await bare.close();
  await using brain = new Brain({ allow: EVERYTHING_ALLOW });
  const session = await brain.sessions.create({ environments: [everything()] });
  assert.deepEqual(session.tools.map((placed) => placed.tool.name), listed.map((tool) => tool.name));
  for (const tool of listed) {
    const placed = session.tools.find((entry) => entry.tool.name === tool.name)!;
    assert.deepEqual(placed.advertised.inputSchema, tool.inputSchema);
    assert.deepEqual(placed.advertised.outputSchema, tool.outputSchema);
    assert.equal(placed.advertised.env, "everything");
  }
  assert.ok(session.tools.find((placed) => placed.tool.name === "get-structured-content")?.advertised.outputSchema);
  const [meta] = await brain.sessions.list();
  assert.deepEqual(meta.tools, session.tools.map((placed) => placed.advertised));
});

Deno.test("mcpEnv places only the tools named, and refuses a name the server lacks", async () => {
  await using brain = new Brain({ allow: EVERYTHING_ALLOW });
  const session = await brain.sessions.create({ environments: [everything(["echo", "get-sum"])] });
  assert.deepEqual(session.tools.map((placed) => placed.tool.name), ["echo", "get-sum"]);
  await assert.rejects(
    brain.sessions.create({ environments: [everything(["echo", "no-such-tool"])] }),
    hasCode("invalid_tool", /no-such-tool/),
  );
});

Deno.test("an Agentloop drives server-everything: progress before results, isError as error, structured content", async () => {
  const provider = new ScriptedProvider([
    {
      toolCalls: [
        { id: "slow", name: "trigger-long-running-operation", input: { duration: 0.3, steps: 3 } },
        { id: "bad", name: "get-sum", input: { a: "one" } },
        { id: "weather", name: "get-structured-content", input: { location: "Chicago" } },
      ],
    },
    "Done.",
  ]);
  await using brain = new Brain({ allow: EVERYTHING_ALLOW });
  const session = await brain.sessions.create({
    environments: [everything(["trigger-long-running-operation", "get-sum", "get-structured-content"])],
    model: { provider, model: "scripted" },
  });
  assert.equal((await session.send("Go.")).content, "Done.");
  const records = await session.read();
  const started = ofKind(records, "tool_call_started");
  const byId = new Map(started.map((record) => [record.toolCallId, record.sequence]));

  const slow = callRecords(records, byId.get("slow")!);
  const text = "Long running operation completed. Duration: 0.3 seconds, Steps: 3.";
  assert.deepEqual(bodies(slow.slice(1)), [
    { kind: "tool_event", call: slow[0].sequence, event: "progress", data: { progress: 1, total: 3 } },
    { kind: "tool_event", call: slow[0].sequence, event: "progress", data: { progress: 2, total: 3 } },
    { kind: "tool_event", call: slow[0].sequence, event: "progress", data: { progress: 3, total: 3 } },
    {
      kind: "tool_result",
      call: slow[0].sequence,
      outcome: { status: "ok", value: [{ type: "text", text }] },
      content: text,
    },
    {
      kind: "tool_call_finished",
      call: slow[0].sequence,
      cause: "finish",
      outcome: { status: "ok", value: [{ type: "text", text }] },
    },
  ]);

  const bad = callRecords(records, byId.get("bad")!);
  assert.deepEqual(bad.map((record) => record.kind), ["tool_call_started", "tool_result", "tool_call_finished"]);
  const failed = bad[2] as Extract<JournalRecord, { kind: "tool_call_finished" }>;
  assert.equal(failed.outcome.status, "error");
  assert.ok(failed.outcome.status === "error" && failed.outcome.error.code === "tool_error");
  assert.match((bad[1] as Extract<JournalRecord, { kind: "tool_result" }>).content!, /Input validation error/);

  const weather = callRecords(records, byId.get("weather")!);
  const value = { temperature: 36, conditions: "Light rain / drizzle", humidity: 82 };
  assert.deepEqual(bodies(weather.slice(1)), [
    {
      kind: "tool_result",
      call: weather[0].sequence,
      outcome: { status: "ok", value },
      content: JSON.stringify(value),
    },
    { kind: "tool_call_finished", call: weather[0].sequence, cause: "finish", outcome: { status: "ok", value } },
  ]);

  const messages = new Map(ofKind(records, "tool_message").map((record) => [record.toolCallId, record.content]));
  assert.equal(messages.get("slow"), text);
  assert.equal(messages.get("weather"), JSON.stringify(value));
  assert.match(messages.get("bad")!, /Input validation error/);
});

Deno.test("a cancelled server-everything call ends cancelled with no record after it", async () => {
  await using brain = new Brain({ allow: EVERYTHING_ALLOW });
  const session = await brain.sessions.create({ environments: [everything(["trigger-long-running-operation"])] });
  const call = await session.start("trigger-long-running-operation", { duration: 60, steps: 600 });
  await until(session, (records) => ofKind(records, "tool_event").length > 0, "a progress event");
  const end = await call.cancel("enough");
  assert.equal(end.cause, "cancelled");
  assert.deepEqual(end.outcome, { status: "cancelled", message: "enough" });
  // A later call on the same connection still works; nothing of the cancelled call follows its end.
  const after = await session.call("trigger-long-running-operation", { duration: 0.1, steps: 1 });
  assert.equal(after.outcome.status, "ok");
  const records = await session.read();
  assert.ok(callRecords(records, call.sequence).every((record) => record.sequence <= end.sequence));
});

Deno.test("cancellation and deadlines reach the MCP server as MCP cancellations", async () => {
  await using brain = new Brain({ allow: countingAllow() });
  const session = await brain.sessions.create({ environments: [counting()] });
  const cancelled = await session.start("wait", {});
  await until(session, (records) => ofKind(records, "tool_event").length === 1, "the wait tool's progress");
  assert.equal((await cancelled.cancel()).cause, "cancelled");
  const timedOut = await session.call("wait", {}, { deadline: Date.now() + 200 });
  assert.equal(timedOut.cause, "timeout");
  const lines = logLines((await session.call("log", {})).outcome);
  assert.deepEqual(lines.map((line) => line.replace(/:.*/, "")), [
    "wait",
    "cancellation received",
    "wait cancelled",
    "wait",
    "cancellation received",
    "wait cancelled",
    "log",
  ]);
  assert.match(lines[2], /cancelled/);
  assert.match(lines[5], /timeout/);
  const again = logLines((await session.call("log", {})).outcome);
  assert.deepEqual(again.slice(lines.length), ["log"], "a call that finished is not cancelled afterwards");
  const events = ofKind(await session.read(), "tool_event");
  assert.deepEqual(events.map((event) => event.data), [
    { progress: 1, message: "waiting" },
    { progress: 1, message: "waiting" },
  ]);
});

Deno.test("a connection lost after sending ends the call unknown; the server saw it once and it is never resent", async () => {
  await using brain = new Brain({ allow: countingAllow() });
  const session = await brain.sessions.create({ environments: [counting()] });
  const lost = await session.call("vanish", {});
  assert.equal(lost.cause, "unknown");
  assert.equal(lost.outcome.status, "unknown");
  assert.match((lost.outcome as { message: string }).message, /sent and then lost/);
  // The next call connects again (a new server process) and sends only itself.
  const log = await session.call("log", {});
  assert.deepEqual(logLines(log.outcome), ["vanish", "log"]);
  const records = await session.read();
  assert.deepEqual(
    ofKind(records, "tool_call_finished").map((record) => record.cause),
    ["unknown", "finish"],
  );
});

Deno.test("after a lost connection, a server that cannot start again ends the next call setup_failed", async () => {
  const allow = countingAllow();
  await using brain = new Brain({ allow });
  const session = await brain.sessions.create({ environments: [counting()] });
  assert.equal((await session.call("vanish", {})).cause, "unknown");
  const refusal = `${session.workspace("counting")}/refuse-start`;
  await Deno.writeTextFile(refusal, "");
  const failed = await session.call("log", {});
  assert.equal(failed.cause, "error");
  assert.ok(failed.outcome.status === "error" && failed.outcome.error.code === "setup_failed");
  assert.match(failed.outcome.error.message, /refusing to start/);
  await Deno.remove(refusal);
  assert.deepEqual(logLines((await session.call("log", {})).outcome), ["vanish", "log"]);
});

Deno.test("mcpEnv's grant is checked against the allow-list before anything starts", async () => {
  await using brain = new Brain({ allow: { env: EVERYTHING_ENV } });
  await assert.rejects(
    brain.sessions.create({ environments: [everything()] }),
    hasCode("permission_denied", /run/),
  );
  assert.deepEqual(await brain.sessions.list(), []);
});

Deno.test("a server that cannot start fails session creation with setup_failed and its stderr", async () => {
  const broken = mcpEnv({ name: "broken", command: DENO, args: ["run", EVERYTHING, "stdio"] });
  await using brain = new Brain({ allow: { run: [DENO] } });
  await assert.rejects(
    brain.sessions.create({ environments: [broken] }),
    hasCode("setup_failed", /GZIP_MAX_FETCH_SIZE/),
  );
  assert.deepEqual(await brain.sessions.list(), []);
});

Deno.test("a command that does not exist fails session creation with setup_failed", async () => {
  const missing = mcpEnv({ name: "missing", command: "/nonexistent/mcp-server" });
  await using brain = new Brain({ allow: { run: ["/nonexistent/mcp-server"] } });
  await assert.rejects(
    brain.sessions.create({ environments: [missing] }),
    hasCode("setup_failed"),
  );
});

Deno.test("a reopened session places the Environment's tools again and checks they are the same", async () => {
  await using brain = new Brain({ allow: EVERYTHING_ALLOW });
  const created = await brain.sessions.create({ environments: [everything(["echo"])] });
  await created.end();
  const reopened = await brain.sessions.get(created.id, { environments: [everything(["echo"])] });
  const end = await reopened.call("echo", { message: "again" });
  assert.deepEqual(end.outcome, { status: "ok", value: [{ type: "text", text: "Echo: again" }] });
  await reopened.end();
  await assert.rejects(
    brain.sessions.get(created.id, { environments: [everything(["echo", "get-sum"])] }),
    hasCode("reattach_mismatch", /get-sum/),
  );
});

Deno.test("a remote Brain client refuses environments; a non-placing Environment is refused too", async () => {
  const server = await serveBrain({ serverToken: "operator" });
  const remote = new Brain({ url: server.url, serverToken: "operator", token: "host-token", host: "mcp-test" });
  const brain = new Brain();
  try {
    await assert.rejects(
      remote.sessions.create({ environments: [everything()] }),
      hasCode("unsupported_runtime"),
    );
    await assert.rejects(
      brain.sessions.create({ environments: [hostEnv({ name: "app" })] }),
      hasCode("invalid_argument", /places no Tools/),
    );
    await assert.rejects(
      brain.sessions.create({ environments: "everything" as unknown as [] }),
      hasCode("invalid_argument"),
    );
  } finally {
    await remote.close();
    await brain.close();
    await server.shutdown();
  }
});

Deno.test("mcpEnv refuses malformed options and permission flags in a Deno server's args", () => {
  const refused = (options: unknown, pattern: RegExp) =>
    assert.throws(
      () => mcpEnv(options as Parameters<typeof mcpEnv>[0]),
      hasCode("invalid_argument", pattern),
    );
  refused({ name: "x", command: Deno.execPath(), args: ["run", "-A", "server.ts"] }, /permissions come from its grant/);
  refused({ name: "x", command: Deno.execPath(), args: ["run", "--allow-net", "server.ts"] }, /permission flags/);
  // Clustered short flags and permission sets from a config file grant as much as -A would.
  for (const flags of [["-NR"], ["-qNRE"], ["-Rq"], ["-P"], ["-qP"], ["-c=deno.json", "--permission-set=default"]]) {
    refused({ name: "x", command: Deno.execPath(), args: ["run", ...flags, "server.ts"] }, /permission flags/);
  }
  for (const flags of [["-q"], ["--quiet"], ["-c=deno.json"], ["-L", "info"], ["-r"], ["--cached-only"]]) {
    assert.equal(mcpEnv({ name: "x", command: Deno.execPath(), args: ["run", ...flags, "server.ts"] }).name, "x");
  }
  // Deno started any other way runs with permissions its grant does not give: eval and task with all of them.
  for (const command of [Deno.execPath(), "deno", "/usr/local/bin/deno"]) {
    for (
      const args of [["eval", "1"], ["task", "serve"], ["-A", "run", "server.ts"], ["--allow-all", "run", "s.ts"], []]
    ) {
      refused({ name: "x", command, args }, /starts with args \["run", module/);
    }
  }
  refused({ name: "x", command: "node", args: ["server.js"], net: ["example.com"] }, /net can be granted only/);
  refused({ name: "x", command: "node", url: "http://127.0.0.1/mcp" }, /exactly one of command/);
  refused({ name: "x", url: "ftp://example.com" }, /http/);
  refused({ name: "x", url: "http://127.0.0.1/mcp", tools: "echo" }, /tools must be a list/);
  refused({ name: "bad name", url: "http://127.0.0.1/mcp" }, /name/);
  const remote = mcpEnv({ name: "remote", url: "https://mcp.example.com/mcp", headers: { authorization: "secret" } });
  assert.deepEqual(remote.grant, { net: ["mcp.example.com"] });
  assert.deepEqual(remote.describe(), {
    kind: "mcp",
    name: "remote",
    url: "https://mcp.example.com/mcp",
    headers: ["authorization"],
  });
});
