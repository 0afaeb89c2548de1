import assert from "node:assert/strict";
import { z } from "zod";
import { type AllowList, type Brain, hostEnv, httpEnv, tool } from "../../mod.ts";
import { extensionEnv } from "../../src/extension/extension_env.ts";
import { toolExtension } from "../../src/extension/extension.ts";
import { serve } from "../_support/serve.ts";
import type { OpenedBrain } from "./brain_suite.ts";
import type { ModelProvider, SessionModel } from "../../src/model/types.ts";
import { hasCode } from "../_support/has_code.ts";

/** A model that answers with the last message it was sent, so a Tool's model use shows in its outcome. */
const parrot: ModelProvider = {
  name: "parrot",
  complete: ({ model, request }) => {
    const last = request.messages.at(-1);
    const said = typeof last?.content === "string" ? last.content : "";
    return Promise.resolve({ content: `heard: ${said}`, toolCalls: [], stopReason: "stop", model });
  },
};

/** The named models every suite Brain serves: its sessions name `"default"`. */
export const suiteModels: Record<string, SessionModel> = { default: { provider: parrot, model: "parrot-1" } };

/**
 * Registers every placement kind a Brain runs, embedded or remote: a `run` Tool in
 * a host Environment with setup and `ctx.environments`, a descriptor in its
 * HTTP Environment, an application function in an Application tool extension.
 * `open` gives a fresh Brain whose Environments may use `allow` and that serves
 * {@linkcode suiteModels}.
 */
export function placementSuite(name: string, open: (allow: AllowList) => Promise<OpenedBrain>): void {
  const test = (title: string, fn: (brain: Brain, service: { url: string; host: string }) => Promise<void>) =>
    Deno.test(`${name}: ${title}`, async () => {
      const extension = toolExtension({ tools: [greet("the extension")()], lifetimeMs: 5_000 });
      await using service = serve((request) => {
        const url = new URL(request.url);
        if (url.pathname.startsWith("/items/")) return Response.json({ id: url.pathname.slice(7), found: true });
        if (url.pathname === "/summarize") return summarize(request);
        return extension.fetch(new Request(new URL(url.pathname.replace(/^\/brain/, ""), url), request));
      });
      const { brain, dispose } = await open({ net: [service.host] });
      try {
        await fn(brain, service);
      } finally {
        await brain.close();
        await dispose();
      }
    });

  test("a host Environment's setup runs once, before the first call's entrypoint", async (brain) => {
    let setups = 0;
    let ready = false;
    const app = hostEnv({ name: "app", setup: () => void (setups++, ready = true) });
    const probe = tool({
      name: "probe",
      description: "Reports whether setup ran.",
      input: z.object({}),
      run: (_input, ctx) => ctx.finish({ ready }),
    });
    const session = await brain.sessions.create({ tools: [probe({ env: app })] });
    for (let i = 0; i < 2; i++) {
      assert.deepEqual((await session.call("probe", {})).outcome, { status: "ok", value: { ready: true } });
    }
    assert.equal(setups, 1);
  });

  test("a failing setup ends each call that needs it setup_failed, never retried automatically", async (brain) => {
    let setups = 0;
    let ran = false;
    const broken = hostEnv({
      name: "broken",
      setup: () => {
        setups++;
        throw new Error("no toolchain");
      },
    });
    const probe = tool({
      name: "probe",
      description: "Must not run.",
      input: z.object({}),
      run: (_input, ctx) => (ran = true, ctx.finish()),
    });
    const session = await brain.sessions.create({ tools: [probe({ env: broken })] });
    for (let i = 0; i < 2; i++) {
      const end = await session.call("probe", {});
      assert.deepEqual([end.cause, end.outcome.status === "error" && end.outcome.error.code], [
        "error",
        "setup_failed",
      ]);
    }
    assert.deepEqual([setups, ran], [1, false]);
  });

  test("ctx.environments is what the binding grants: list is granted, get is refused", async (brain) => {
    const app = hostEnv({ name: "app", control: ["list"] });
    const lister = tool({
      name: "lister",
      description: "Lists the session's Environments, then tries get.",
      input: z.object({}),
      run: async (_input, ctx) => {
        const listed = await ctx.environments.list();
        const refused = await ctx.environments.get("app").then(() => "granted", (error) => error.code);
        return ctx.finish({ names: listed.map((info) => `${info.kind}:${info.name}`), refused });
      },
    });
    const session = await brain.sessions.create({ tools: [lister({ env: app })] });
    assert.deepEqual((await session.call("lister", {})).outcome, {
      status: "ok",
      value: { names: ["host:app"], refused: "permission_denied" },
    });
  });

  test("a descriptor placement is interpreted by its HTTP Environment", async (brain, service) => {
    const items = httpEnv({ name: "items", baseUrl: service.url });
    const fetchItem = tool({
      name: "fetch_item",
      description: "Fetch one item.",
      input: z.object({ id: z.string() }),
      implementation: () => ({ type: "http_json", method: "GET", path: "/items/{id}" }),
    });
    const session = await brain.sessions.create({ tools: [fetchItem({ env: items })] });
    assert.deepEqual((await session.call("fetch_item", { id: "7" })).outcome, {
      status: "ok",
      value: { id: "7", found: true },
    });
  });

  test("an application function placed in an extension runs in the extension", async (brain, service) => {
    const env = extensionEnv({ name: "app-http", url: `${service.url}/brain` });
    const session = await brain.sessions.create({ tools: [greet("the application")({ env })] });
    const end = await session.call("greet", { name: "Ada" });
    assert.deepEqual(end.outcome, { status: "ok", value: "hello Ada from the extension" });
  });

  test(
    "a descriptor whose HTTP Environment is granted model calls the session's model as the call",
    async (brain, service) => {
      const env = httpEnv({ name: "writer", baseUrl: service.url, model: true });
      const session = await brain.sessions.create({ tools: [summarizer({ env })], model: "default" });
      const end = await session.call("summarize", { text: "a long text" });
      assert.deepEqual(end.outcome, { status: "ok", value: { summary: "heard: Summarize: a long text", status: 200 } });
      const records = await session.read();
      const started = records.find((record) => record.kind === "tool_call_started")!;
      const asked = records.find((record) => record.kind === "model_call_started");
      assert.deepEqual(asked?.kind === "model_call_started" && asked.origin, {
        kind: "tool",
        tool: "summarize",
        call: started.sequence,
      });
      const finished = records.find((record) => record.kind === "tool_call_finished")!;
      assert.ok(asked!.sequence < finished.sequence, "the model call is journaled inside the Tool call");
    },
  );

  test("a model grant without a session model ends the request model_unavailable", async (brain, service) => {
    const env = httpEnv({ name: "writer", baseUrl: service.url, model: true });
    const session = await brain.sessions.create({ tools: [summarizer({ env })] });
    const end = await session.call("summarize", { text: "x" });
    assert.deepEqual(end.outcome, {
      status: "ok",
      value: { summary: null, status: 503, error: "model_unavailable" },
    });
  });

  test("an Environment outside the allow-list is refused permission_denied at creation", async (brain) => {
    const far = httpEnv({ name: "far", baseUrl: "http://far.example" });
    const fetchItem = tool({
      name: "fetch_item",
      description: "Fetch one item.",
      input: z.object({ id: z.string() }),
      implementation: () => ({ type: "http_json", method: "GET", path: "/items/{id}" }),
    });
    await assert.rejects(
      brain.sessions.create({ tools: [fetchItem({ env: far })] }),
      hasCode("permission_denied"),
    );
  });
}

/** One declaration; `where` says which process ran it. */
function greet(where: string) {
  return tool({
    name: "greet",
    description: "Greets by name, where it runs.",
    input: z.object({ name: z.string() }),
    run: ({ name }, ctx) => ctx.finish(`hello ${name} from ${where}`),
  });
}

const summarizer = tool({
  name: "summarize",
  description: "Summarizes through the model execution service its Environment hands it.",
  input: z.object({ text: z.string() }),
  output: z.object({ summary: z.string().nullable(), status: z.number(), error: z.string().optional() }),
  implementation: () => ({ type: "http_json", method: "POST", path: "/summarize" }),
});

/** The Environment's endpoint: it asks the model through the URL and token the request carries. */
async function summarize(request: Request): Promise<Response> {
  const { text } = await request.json();
  const url = request.headers.get("brain-model-url");
  if (!url) return Response.json({ summary: null, status: 0, error: "no model granted" });
  const answer = await fetch(url, {
    method: "POST",
    headers: { authorization: `Bearer ${request.headers.get("brain-model-token")}` },
    body: JSON.stringify({ messages: [{ role: "user", content: `Summarize: ${text}` }] }),
  });
  const body = await answer.json();
  return Response.json(
    answer.ok
      ? { summary: body.content, status: answer.status }
      : { summary: null, status: answer.status, error: body.error.code },
  );
}
