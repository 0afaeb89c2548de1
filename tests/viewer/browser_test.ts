import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { KvJournal } from "../../src/journal/kv.ts";
import { ScriptedProvider } from "../../src/model/testing.ts";
import { serveBrain, type ServedBrain } from "../../src/host/server/server.ts";
import { gate } from "../_support/gate.ts";
import { scratchDir } from "../_support/scratch.ts";
import { browserTest, hasChromium, launchChromium } from "./browser.ts";
import { hostSessionKey } from "../../src/util/names.ts";

/** The browser's, for functions that run in the page; Deno's type library has no DOM. */
declare const getComputedStyle: (element: unknown) => { backgroundColor: string; color: string };

const OPERATOR = "operator-secret";
const HOST = { url: "", token: "host-token", host: "app", serverToken: OPERATOR };
const REPORT = "r".repeat(5000);

/** The Tools of the conversation: one finishing with events and a large result, one failing, two in the background, one waiting for its end. */
function tools(later: Promise<void>) {
  const quick = tool({
    name: "quick",
    description: "Reports at once.",
    input: z.object({}),
    run: async (_input, ctx) => {
      await ctx.emit("progress", { step: 1 });
      await ctx.emit("progress", { step: 2 });
      return ctx.finish({ report: REPORT }, { content: "The report is ready." });
    },
  });
  const broken = tool({
    name: "broken",
    description: "Fails.",
    input: z.object({}),
    run: (_input, ctx) => ctx.finish({ status: "error", error: { code: "not_found", message: "no such price" } }),
  });
  const watch = tool({
    name: "watch",
    description: "Reports later.",
    input: z.object({}),
    run: (_input, ctx) => {
      void later.then(async () => {
        await ctx.emitResult({ price: 42 }, { content: "The price is now 42." });
        await ctx.finish();
      });
    },
  });
  const forever = tool({ name: "forever", description: "Never finishes.", input: z.object({}), run: () => {} });
  const wait = tool({
    name: "wait",
    description: "Waits for its end.",
    input: z.object({}),
    run: (_input, ctx) => new Promise<void>((resolve) => ctx.signal.addEventListener("abort", () => resolve())),
  });
  return [quick(), broken(), watch(), forever(), wait()];
}

function serve(path: string, port: number, steps: ConstructorParameters<typeof ScriptedProvider>[0]) {
  return serveBrain({
    port,
    path,
    serverToken: OPERATOR,
    models: { default: { provider: new ScriptedProvider(steps), model: "demo" } },
  });
}

async function head(server: ServedBrain, id: string): Promise<number> {
  return await server.journal.head(hostSessionKey(HOST.host, id));
}

Deno.test({
  name: browserTest("a person sees the conversation's turns and outcomes live, and the page resumes after a restart"),
  ignore: !hasChromium,
  async fn() {
    const dir = scratchDir("viewer_browser");
    const path = `${dir}/journal.kv`;
    const later = gate();
    let server = await serve(path, 0, [
      {
        toolCalls: [
          { id: "q", name: "quick", input: {} },
          { id: "b", name: "broken", input: {} },
          { id: "w", name: "watch", input: {} },
          { id: "f", name: "forever", input: {} },
        ],
      },
      "I am watching the price.",
      "The price moved to 42.",
    ]);
    const port = Number(new URL(server.url).port);
    await using browser = await launchChromium(dir);
    let client = new Brain({ ...HOST, url: server.url });
    try {
      const session = await client.sessions.create({ tools: tools(later.wait), model: "default" });
      await session.send("Watch the price.");
      const timedOut = await session.call("wait", {}, { deadline: Date.now() + 100 });
      assert.equal(timedOut.cause, "timeout");
      const stop = new AbortController();
      const cancelled = await session.start("wait", {}, { signal: stop.signal });
      stop.abort();
      assert.equal((await cancelled.ended).cause, "cancelled");

      const page = await browser.newPage();
      page.setDefaultTimeout(10_000);
      await page.goto(`${server.url}/viewer/#token=${OPERATOR}`);
      // The operator sees every host's sessions under their host-scoped journal keys.
      const key = hostSessionKey(HOST.host, session.id);
      await page.locator(`tr[data-session="${key}"] a`).click();
      const timeline = page.locator("#timeline");
      await timeline.and(page.locator(`[data-last="${await head(server, session.id)}"]`)).waitFor();
      assert.equal(new URL(page.url()).hash, `#/s/${key}`, "the token left the address once used");

      const call = (name: string) => page.locator(`details.call[data-tool="${name}"]`);
      const label = (name: string) => call(name).locator("summary .badge").innerText();
      assert.equal(await label("quick"), "ok");
      assert.equal(await label("broken"), "error");
      assert.equal(await label("watch"), "open · background");
      assert.equal(await label("forever"), "open · background");
      assert.deepEqual(await call("wait").locator("summary .badge").allInnerTexts(), ["timeout", "cancelled"]);
      const colors = await page.locator("summary .badge").evaluateAll((badges) =>
        new Set(badges.map((badge) => `${getComputedStyle(badge).backgroundColor} ${getComputedStyle(badge).color}`))
          .size
      );
      assert.equal(colors, 5, "ok, error, open, timeout and cancelled look different");

      assert.equal(await page.locator(".msg.user").innerText().then((text) => text.includes("Watch the price.")), true);
      assert.match(await page.locator(".msg.assistant").nth(1).innerText(), /I am watching the price\./);
      assert.match(await page.locator(".model").first().innerText(), /\d+ in \/ \d+ out tokens/);

      const quick = call("quick");
      assert.equal(await quick.locator(".events").isVisible(), false, "a call row starts collapsed");
      await quick.locator("summary").click();
      assert.deepEqual(
        await quick.locator(".event code").allInnerTexts(),
        ["progress", "progress"],
        "events in the order they were emitted",
      );
      assert.match(await quick.locator(".content").innerText(), /The report is ready\./);
      const big = quick.locator(".result pre[data-truncated]");
      assert.ok((await big.innerText()).length < REPORT.length, "a large payload is cut");
      await quick.locator(".result .expand").click();
      assert.ok((await big.innerText()).includes(REPORT), "and shown in full on request");
      await call("broken").locator("summary").click();
      assert.match(await call("broken").locator(".end").innerText(), /not_found no such price/);
      await page.screenshot({ path: ".tmp/viewer-session.png", fullPage: true });

      later.open();
      await call("watch").locator('summary .badge[data-outcome="ok"]').waitFor();
      await page.getByText("The price moved to 42.").waitFor();
      assert.match(await page.locator(".turn").last().locator("h2").innerText(), /woken/);

      const lost = await session.start("wait", {});
      assert.ok(server.dropHost("app"), "the host loses its connection while the call runs");
      assert.equal((await lost.ended).cause, "unknown");
      await call("forever").locator('summary .badge[data-outcome="unknown"]').waitFor();
      assert.deepEqual(await call("wait").locator("summary .badge").allInnerTexts(), [
        "timeout",
        "cancelled",
        "unknown",
      ]);
      const outcomes = await page.locator("summary .badge").evaluateAll((badges) =>
        new Set(badges.map((badge) => `${getComputedStyle(badge).backgroundColor} ${getComputedStyle(badge).color}`))
          .size
      );
      assert.equal(outcomes, 5, "unknown looks different from ok, error, timeout and cancelled");

      await client.close();
      await server.shutdown();
      await page.locator('#connection:not([data-state="live"])').waitFor();

      server = await serve(path, port, ["Nothing else is running."]);
      client = new Brain({ ...HOST, url: server.url });
      const again = await client.sessions.get(session.id, { tools: tools(later.wait), model: "default" });
      await again.send("Anything else?");
      await page.getByText("Nothing else is running.").waitFor();
      await timeline.and(page.locator(`[data-last="${await head(server, session.id)}"]`)).waitFor();
      await page.locator('#connection[data-state="live"]').waitFor();
      const sequences = await page.locator("[data-seq]").evaluateAll((nodes) =>
        nodes.map((node) => node.getAttribute("data-seq"))
      );
      assert.equal(new Set(sequences).size, sequences.length, "no record is shown twice");
      assert.deepEqual(await page.locator(".msg.user pre").allInnerTexts(), ["Watch the price.", "Anything else?"]);
      assert.equal(await page.locator(".msg.assistant").count(), 4);
      await page.screenshot({ path: ".tmp/viewer.png", fullPage: true });
    } finally {
      await client.close();
      await server.shutdown();
    }
  },
});

Deno.test({
  name: browserTest("the page asks for credentials, and a host signs in to see only its own sessions"),
  ignore: !hasChromium,
  async fn() {
    const dir = scratchDir("viewer_browser");
    const journal = await KvJournal.open(`${dir}/journal.kv`);
    const brain = new Brain({ journal });
    await brain.sessions.create({ id: "mine", host: { id: "app", token: "app-token" } });
    await brain.sessions.create({ id: "theirs", host: { id: "other", token: "other-token" } });
    const viewer = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, brain.viewer().fetch);
    await using browser = await launchChromium(dir);
    try {
      const page = await browser.newPage();
      await page.goto(`http://127.0.0.1:${viewer.addr.port}/viewer/`);
      await page.locator("#host-login input[name=host]").fill("app");
      await page.locator("#host-login input[name=token]").fill("wrong");
      await page.locator("#host-login button").click();
      await page.locator("#sessions").waitFor();
      assert.equal(await page.locator("tr[data-session]").count(), 0, "a wrong token sees no session");
      await page.locator("#logout").click();
      await page.locator("#host-login input[name=host]").fill("app");
      await page.locator("#host-login input[name=token]").fill("app-token");
      await page.locator("#host-login button").click();
      await page.locator('tr[data-session="mine"]').waitFor();
      assert.deepEqual(
        await page.locator("tr[data-session]").evaluateAll((rows) => rows.map((row) => row.dataset.session)),
        [
          "mine",
        ],
      );
      assert.equal(await page.locator("#who").innerText(), "host app");
      await page.goto(`http://127.0.0.1:${viewer.addr.port}/viewer/#/s/theirs`);
      await page.getByRole("alert").waitFor();
      assert.match(await page.getByRole("alert").innerText(), /no session theirs/);
    } finally {
      await viewer.shutdown();
      await brain.close();
    }
  },
});
