/**
 * What creating many sessions on a Deno KV file costs per session, embedded and
 * through a Brain server: the same 5,000 sessions created as ten Brains of 500
 * (the baseline) and as one Brain of 5,000. Each bench creates 5,000 sessions,
 * so the ratio is the cost of a session among 5,000 against one among 500: 1x
 * when creating is linear. Each Brain and server opens a fresh KV file before
 * the clock starts and closes after it stops. Run with `deno task bench`.
 */
import { Brain } from "../mod.ts";
import { serveBrain } from "../src/host/server/mod.ts";

const TOTAL = 5_000;
const dir = `.tmp/session_create_bench-${crypto.randomUUID()}`;
await Deno.mkdir(dir, { recursive: true });
globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));

/** A Brain over a fresh KV file, embedded or as the client of a server over one; `close` stops both. */
async function freshBrain(served: boolean): Promise<{ brain: Brain; close(): Promise<void> }> {
  const path = `${dir}/${crypto.randomUUID()}.kv`;
  if (!served) {
    const brain = await Brain.open({ path });
    return { brain, close: () => brain.close() };
  }
  const server = await serveBrain({ path, serverToken: "bench" });
  const brain = new Brain({ url: server.url, serverToken: "bench", token: "bench-host" });
  return {
    brain,
    async close() {
      await brain.close();
      await server.shutdown();
    },
  };
}

/** Creates {@linkcode TOTAL} sessions as `TOTAL / size` Brains of `size`, timing the creations only. */
function createSessions(served: boolean, size: number): (b: Deno.BenchContext) => Promise<void> {
  return async (b) => {
    const brains = await Promise.all(Array.from({ length: TOTAL / size }, () => freshBrain(served)));
    b.start();
    for (const { brain } of brains) {
      for (let created = 0; created < size; created++) await brain.sessions.create();
    }
    b.end();
    await Promise.all(brains.map((opened) => opened.close()));
  };
}

for (const [name, served] of [["embedded", false], ["served", true]] as const) {
  const group = `5,000 KV sessions created (${name})`;
  Deno.bench(`10 Brains of 500 sessions`, { group, baseline: true, n: 2, warmup: 0 }, createSessions(served, 500));
  Deno.bench(`1 Brain of 5,000 sessions`, { group, n: 2, warmup: 0 }, createSessions(served, 5_000));
}
