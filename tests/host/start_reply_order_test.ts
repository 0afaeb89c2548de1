import assert from "node:assert/strict";
import { MemoryJournal } from "../../src/journal/memory.ts";
import type { SessionMeta } from "../../src/journal/records.ts";
import { hostSessionKey } from "../../src/util/names.ts";
import { servedBrain } from "../_support/served_brain.ts";
import { rawHost } from "./raw_host.ts";

/** A memory journal whose session lookups answer `delay` microtasks late: a request that looks one up waits that long. */
class LateLookups extends MemoryJournal {
  delay = 0;
  override getSession(id: string): Promise<SessionMeta | undefined> {
    let meta = super.getSession(id);
    for (let tick = 0; tick < this.delay; tick++) meta = meta.then((found) => found);
    return meta;
  }
}

/**
 * How many lookup delays are tried, one microtask apart: the cancel's lookup then ends at every step from the
 * start's commit to well past its reply. Were the reply sent a step after the held invoke is released (as before
 * it was sent in that step), a cancel ending between the two would put its abort ahead of the reply, and the
 * client would run a call that had already ended.
 */
const OFFSETS = 12;

Deno.test("a cancel in the same message as its start reaches the client only after the reply that gives it the call", async () => {
  const journal = new LateLookups();
  await using server = await servedBrain({ journal, serverToken: "operator-secret" });
  const raw = await rawHost(server.url, "app", "order-token");
  let id = 0;
  const request = (frames: object[]) =>
    raw.socket.send(JSON.stringify(frames.map((frame) => ({ id: ++id, ...frame }))));
  const replyTo = async (wanted: number) => {
    for (;;) {
      const frame = await raw.next() as { t: string; id?: number };
      if (frame.t === "reply" && frame.id === wanted) return frame;
    }
  };
  request([{ op: "attach", handles: [] }]);
  await replyTo(id);
  const advertised = {
    name: "wait",
    description: "Runs until it is aborted.",
    inputSchema: { type: "object" },
    implementation: "host",
  };
  let raced = 0;
  for (let delay = 0; delay < OFFSETS; delay++) {
    const session = `s${delay}`;
    request([{ op: "create", handle: session, session, tools: [advertised] }]);
    await replyTo(id);
    const call = await journal.head(hostSessionKey("app", session)) + 1;
    journal.delay = delay;
    const seen = raw.seen.length;
    // The cancel names the call its start will commit: both are applied in the same turn of the server's loop.
    request([{ op: "start", handle: session, tool: "wait", input: {} }, { op: "cancel", session, call }]);
    const started = id - 1;
    await replyTo(id);
    const frames = raw.seen.slice(seen) as { t: string; id?: number; call?: number; value?: { run?: true } }[];
    const reply = frames.findIndex((frame) => frame.t === "reply" && frame.id === started);
    const abort = frames.findIndex((frame) => frame.t === "abort" && frame.call === call);
    const run = frames[reply]?.value?.run === true;
    if (run && abort >= 0) raced++;
    assert.ok(
      !run || abort < 0 || abort > reply,
      `delay ${delay}: the abort came before the reply that carries the call`,
    );
  }
  assert.ok(raced > 0, "some cancel reached a call already sent to the client");
  raw.socket.close();
  await raw.closed;
});
