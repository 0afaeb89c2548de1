import assert from "node:assert/strict";
import { z } from "zod";
import { tool } from "../../mod.ts";
import type { JournalRecord } from "../../src/journal/records.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { serveBrain } from "../../src/host/server/server.ts";
import { ofKind } from "../_support/until.ts";
import { DEFAULT_BUDGETS, rawHost } from "./raw_host.ts";
import { hostSessionKey } from "../../src/util/names.ts";

const SECRET = "raw-server-model-key";

const background = tool({
  name: "background",
  description: "Starts work that outlives the turn.",
  input: z.object({}),
  run: () => {},
});

type Frame = { t: string; id?: number; call?: number; value?: unknown };

/** Reads frames until the reply to request `id`; returns it with the frames that came before it. */
async function replyTo(raw: { next(): Promise<unknown> }, id: number): Promise<{ reply: Frame; before: Frame[] }> {
  const before: Frame[] = [];
  for (;;) {
    const frame = await raw.next() as Frame;
    if (frame.t === "reply" && frame.id === id) return { reply: frame, before };
    before.push(frame);
  }
}

Deno.test("a call the server's Agentloop starts while its host is away ends host_disconnected and is never sent", async () => {
  const provider = new ScriptedProvider([
    { toolCalls: [{ id: "t1", name: "background", input: {} }] },
    "Started in the background.",
    { toolCalls: [{ id: "t2", name: "background", input: {} }] },
    "The host is away.",
  ]);
  const server = await serveBrain({
    serverToken: "operator-secret",
    models: { default: { provider, model: "m", credentials: { apiKey: SECRET } } },
  });
  const advertised = [background().advertised];
  const raw = await rawHost(server.url, "raw", "raw-token");
  try {
    raw.socket.send(JSON.stringify({ id: 1, op: "attach", handles: [] }));
    await replyTo(raw, 1);
    raw.socket.send(
      JSON.stringify({ id: 2, op: "create", handle: "h", session: "s", tools: advertised, model: "default" }),
    );
    assert.deepEqual((await replyTo(raw, 2)).reply, { t: "reply", id: 2, value: DEFAULT_BUDGETS });
    raw.socket.send(JSON.stringify({ id: 3, op: "send", handle: "h", content: "Start it." }));
    const invoke = await raw.next() as Frame;
    assert.deepEqual([invoke.t, (invoke as { tool?: string }).tool], ["invoke", "background"]);
    // The host returns without finishing: the call stays open in the background.
    raw.socket.send(JSON.stringify({ id: 4, op: "returned", session: "s", call: invoke.call }));
    await replyTo(raw, 4);
    const { reply } = await replyTo(raw, 3);
    assert.equal((reply.value as { content: string }).content, "Started in the background.");

    // The host goes away for good. Its open call ends unknown, which wakes the loop on the server.
    raw.socket.close();
    await raw.closed;
    const records: JournalRecord[] = [];
    for await (
      const record of server.journal.subscribe(hostSessionKey("raw", "s"), { signal: AbortSignal.timeout(5_000) })
    ) {
      records.push(record);
      if (ofKind(records, "assistant_message").length === 4) break;
    }
    const [lost, away] = ofKind(records, "tool_call_started");
    assert.deepEqual(ofKind(records, "tool_call_finished").map(({ call, cause }) => [call, cause]), [
      [lost.sequence, "unknown"],
      [away.sequence, "error"],
    ]);
    const ofAway = records.filter((record) => "call" in record && record.call === away.sequence);
    assert.deepEqual(
      ofAway.map((record) => record.kind),
      ["tool_result", "tool_call_finished", "tool_message"],
      "only the failure Brain recorded itself: no event, return or result from a host",
    );
    const finished = ofAway[1] as Extract<JournalRecord, { kind: "tool_call_finished" }>;
    assert.deepEqual(finished.outcome.status === "error" && finished.outcome.error, {
      code: "host_disconnected",
      message: "host raw is not connected; the call was not sent",
      retryable: true,
    });
    assert.equal(ofKind(records, "assistant_message").at(-1)?.content, "The host is away.");
    const answered = provider.calls[3].request.messages.at(-1);
    assert.equal(answered?.role === "tool" && answered.content.includes("host_disconnected"), true);

    // The host comes back: neither call is sent to it again.
    const back = await rawHost(server.url, "raw", "raw-token");
    try {
      back.socket.send(JSON.stringify({
        id: 1,
        op: "attach",
        handles: [{ handle: "h", session: "s", tools: advertised, model: "default" }],
      }));
      assert.deepEqual((await replyTo(back, 1)).reply.value, {
        failed: [],
        opened: [{ handle: "h", budgets: DEFAULT_BUDGETS }],
        maxFrameBytes: 16 * 1024 * 1024,
      });
      back.socket.send(JSON.stringify({ id: 2, op: "list" }));
      assert.deepEqual((await replyTo(back, 2)).before, [], "no invoke arrived before a later reply");
      assert.equal(JSON.stringify([raw.seen, back.seen]).includes(SECRET), false, "no frame carried the key");
    } finally {
      back.socket.close();
      await back.closed;
    }
    assert.equal(provider.calls.length, 4);
  } finally {
    if (raw.socket.readyState !== WebSocket.CLOSED) raw.socket.close();
    await server.shutdown();
  }
});
