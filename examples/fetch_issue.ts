/**
 * The spec's descriptor example: `fetch_issue` is an `http_json` descriptor that
 * the `github` HTTP Environment interprets. A local hono server on 127.0.0.1
 * stands in for the repository API.
 *
 * Run: deno run --allow-net=127.0.0.1 examples/fetch_issue.ts
 */
import { Hono } from "hono";
import { z } from "zod";
import { Brain, type CallEnd, httpEnv, tool } from "../mod.ts";

export const fetchIssue = tool({
  name: "fetch_issue",
  description: "Fetch one issue.",
  input: z.object({ number: z.number().int() }),
  options: z.object({ repository: z.string() }),
  implementation: ({ repository }) => ({
    type: "http_json",
    method: "GET",
    path: `/repos/${repository}/issues/{number}`,
  }),
});

/** A stand-in for the repository API: one issue, #7, in aexhq/brain. */
export function repositoryApi(): Hono {
  const api = new Hono();
  api.get("/repos/:owner/:repo/issues/:number", (c) => {
    const { owner, repo, number } = c.req.param();
    if (`${owner}/${repo}` !== "aexhq/brain" || number !== "7") return c.json({ message: "Not Found" }, 404);
    return c.json({ number: 7, title: "Descriptors for HTTP Environments", state: "open" });
  });
  return api;
}

/** Serves the stand-in API, calls fetch_issue for `number` through a Brain session, and returns how it ended. */
export async function fetchIssueExample(number: number): Promise<CallEnd> {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, repositoryApi().fetch);
  const brain = new Brain({ allow: { net: ["127.0.0.1"] } });
  try {
    const github = httpEnv({ name: "github", baseUrl: `http://127.0.0.1:${server.addr.port}` });
    const placed = fetchIssue({ env: github, repository: "aexhq/brain" });
    const session = await brain.sessions.create({ tools: [placed] });
    return await session.call(placed, { number }, { deadline: Date.now() + 10_000 });
  } finally {
    await brain.close();
    await server.shutdown();
  }
}

if (import.meta.main) {
  console.log((await fetchIssueExample(7)).outcome);
}
