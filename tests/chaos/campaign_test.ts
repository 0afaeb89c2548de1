import assert from "node:assert/strict";
import { scratchDir } from "../_support/scratch.ts";
import { crashCampaign } from "./crash_campaign.ts";
import { remoteCampaign } from "./remote_campaign.ts";
import { sessionStress } from "./session_stress.ts";
import { remoteStress } from "./remote_stress.ts";
import { componentStress } from "./component_stress.ts";

// A small fixed-seed run of the campaigns `deno task chaos` runs at random and at length.
const dir = scratchDir("campaign_test");

Deno.test("crash campaign (seed 11, 4 rounds on a KV file): no acknowledged record lost, one terminal per call, no orphan chunks", async () => {
  const report = await crashCampaign({ seed: 11, rounds: 4, journal: `${dir}/crash.kv` });
  assert.deepEqual(report.violations, []);
  assert.ok(report.calls > 0, "callers were told of ends before the kills");
});

Deno.test("remote campaign (seed 11, 7 faults on a KV file): at most one dispatch, every caller settles by its deadline + 2 s, the client serves again", async () => {
  const report = await remoteCampaign({
    seed: 11,
    faults: 7,
    journal: `${dir}/remote.kv`,
    kinds: ["cut", "tear", "delay", "blackhole", "kill", "stop", "crashloop"],
  });
  assert.deepEqual(report.violations, []);
  assert.equal(Object.values(report.faults).reduce((sum, count) => sum + count, 0), 7);
});

for (const journal of ["memory", "kv"] as const) {
  Deno.test(`session stress (seed 11, 16 sessions of 40 calls on a ${journal} journal, some ended mid-run): ordered records, one terminal per call, no open call, every subscriber sees each record once`, async () => {
    const report = await sessionStress({ seed: 11, sessions: 16, calls: 40, journal });
    assert.deepEqual(report.violations, []);
    assert.ok(report.calls > 0);
  });
}

Deno.test("remote stress (seed 11, 128 concurrent calls with cancels, deadlines and a link fault): one dispatch each, every caller settles, nothing left open or running", async () => {
  const report = await remoteStress({ seed: 11, calls: 128 });
  assert.deepEqual(report.violations, []);
});

Deno.test("component stress (seed 11, 12 calls that trap, time out, are cancelled, fail and succeed): a fresh instance per call, one dispatch each, no sandbox left", async () => {
  const report = await componentStress({ seed: 11, calls: 12 });
  assert.deepEqual(report.violations, []);
});
