/**
 * `deno task chaos [seed] [scale]`: the randomized fault campaigns, not part of
 * `deno task test` (the suite runs a small fixed-seed version in
 * `campaign_test.ts`). Each campaign runs with the seed (the time by default,
 * printed so a failing run can be repeated) and `scale` times its base size:
 * - crash: embedded workers SIGKILLed / SIGSTOPped mid-call, on a KV file and on PostgreSQL;
 * - remote: a client through a fault proxy to a server process that is cut, torn,
 *   delayed, blackholed, killed, crash-looped and stopped, on a KV file and on PostgreSQL;
 * - sessions: many interleaved sessions whose calls finish, fail, time out and are
 *   cancelled, some sessions ended mid-run, on a memory journal and a KV one;
 * - remote stress: hundreds of concurrent remote calls with cancels and deadlines, and a link cut;
 * - component: a sandbox's calls trapping, timing out, cancelled, failing and succeeding.
 * Exits 1 if any campaign saw a violation.
 */
import { PostgresJournal } from "../../src/journal/postgres.ts";
import { startPostgres } from "../_support/postgres.ts";
import { crashCampaign } from "./crash_campaign.ts";
import { type CampaignReport, remoteCampaign } from "./remote_campaign.ts";
import { sessionStress } from "./session_stress.ts";
import { remoteStress } from "./remote_stress.ts";
import { componentStress } from "./component_stress.ts";

const seed = Number(Deno.args[0] ?? Date.now() % 1_000_000);
const scale = Number(Deno.args[1] ?? 1);
const dir = `.tmp/chaos-${crypto.randomUUID()}`;
await Deno.mkdir(dir, { recursive: true });
const log = (line: string) => console.error(`  ${line}`);
let failed = false;
const report = (name: string, result: CampaignReport) => {
  failed ||= result.violations.length > 0;
  console.log(`${name}: ${JSON.stringify({ seed, ...result }, null, 1)}`);
};
await using pg = await startPostgres();
try {
  for (const journal of ["memory", "kv"] as const) {
    report(`sessions on a ${journal} journal`, await sessionStress({ seed, sessions: 32, calls: 50 * scale, journal }));
  }
  report("remote stress", await remoteStress({ seed, calls: 256 * scale }));
  report("component", await componentStress({ seed, calls: 30 * scale }));
  report("crash on a KV file", await crashCampaign({ seed, rounds: 20 * scale, journal: `${dir}/crash.kv`, log }));
  report("crash on PostgreSQL", await crashCampaign({ seed, rounds: 10 * scale, journal: pg.url, log }));
  report("remote on a KV file", await remoteCampaign({ seed, faults: 30 * scale, journal: `${dir}/remote.kv`, log }));
  report(
    "remote on PostgreSQL",
    await remoteCampaign({ seed, faults: 15 * scale, journal: pg.url, open: () => PostgresJournal.open(pg.url), log }),
  );
} finally {
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
console.log(failed ? `violations found (seed ${seed})` : `no violation (seed ${seed})`);
if (failed) Deno.exit(1);
