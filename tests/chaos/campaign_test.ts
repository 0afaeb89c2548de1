import assert from "node:assert/strict";
import { scratchDir } from "../_support/scratch.ts";
import { crashCampaign } from "./crash_campaign.ts";
import { remoteCampaign } from "./remote_campaign.ts";

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
