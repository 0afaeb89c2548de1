import assert from "node:assert/strict";
import { z } from "zod";
import { type AllowList, type Brain, BrainError, hostEnv, httpEnv, tool } from "../../mod.ts";
import { extensionEnv } from "../../src/extension/extension_env.ts";
import { toolExtension } from "../../src/extension/extension.ts";
import { serve } from "../_support/serve.ts";
import type { OpenedBrain } from "./brain_suite.ts";

/**
 * Registers every placement kind a Brain runs, embedded or remote: a `run` Tool in
 * a host Environment with setup and `ctx.environments`, a descriptor in its
 * HTTP Environment, an application function in an Application tool extension.
 * `open` gives a fresh Brain whose Environments may use `allow`.
 */
export function placementSuite(name: string, open: (allow: AllowList) => Promise<OpenedBrain>): void {
  const test = (title: string, fn: (brain: Brain, service: { url: string; host: string }) => Promise<void>) =>
    Deno.test(`${name}: ${title}`, async () => {
      const extension = toolExtension({ tools: [greet("the extension")()], lifetimeMs: 5_000 });
      await using service = serve((request) => {
        const url = new URL(request.url);
        if (url.pathname.startsWith("/items/")) return Response.json({ id: url.pathname.slice(7), found: true });
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
      (error: BrainError) => error instanceof BrainError && error.code === "permission_denied",
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
