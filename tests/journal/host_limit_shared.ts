import assert from "node:assert/strict";
import type { Journal } from "../../src/journal/journal.ts";

/** A session of host `host`. */
export const hostSession = (id: string, host: string) => ({
  id,
  createdAt: Date.now(),
  tools: [],
  host: { id: host, tokenHash: "x" },
});

/**
 * Journals of one store (as processes or servers sharing it) create 40 sessions of one host at once under
 * `maxHostSessions: 10`: exactly 10 land, whichever journal created them; a delete in one frees room for another.
 */
export async function assertHostLimitShared(journals: Journal[]): Promise<void> {
  const limit = { maxHostSessions: 10 };
  const created = await Promise.allSettled(
    Array.from(
      { length: 40 },
      (_, index) => journals[index % journals.length].createSession(hostSession(`s${index}`, "h"), limit),
    ),
  );
  const refused = created.filter((outcome) => outcome.status === "rejected") as PromiseRejectedResult[];
  assert.deepEqual([...new Set(refused.map(({ reason }) => reason.code))], ["limit_exceeded"]);
  assert.equal(created.length - refused.length, 10, "10 creations succeeded");
  const kept = (await journals[0].listSessions()).filter((meta) => meta.host?.id === "h");
  assert.equal(kept.length, 10, "10 sessions of the host are stored");
  await assert.rejects(journals[1].createSession(hostSession("more", "h"), limit), { code: "limit_exceeded" });
  await journals[2].deleteSession(kept[0].id);
  await journals[1].createSession(hostSession("more", "h"), limit);
  await assert.rejects(journals[0].createSession(hostSession("again", "h"), limit), { code: "limit_exceeded" });
}
