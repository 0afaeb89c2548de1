import { z } from "zod";
import { type BrainSession, component, http, httpEnv, type PlacedTool, tool } from "../../mod.ts";
import { extensionEnv, toolExtension } from "../../src/extension/mod.ts";
import { PROBE, reader } from "../_support/components.ts";
import { serve } from "../_support/serve.ts";
import { untilRecord } from "./_brains.ts";

/**
 * The Tool kinds the spec promises the same outcomes and records for: a `run` function in the application, the
 * same declaration in an Application tool extension, a Component, an `http_json` descriptor an HTTP
 * Environment interprets, and a v1 `http()` placement.
 */
export const KINDS = ["in-process", "extension", "component", "http_json", "http"] as const;
export type Kind = (typeof KINDS)[number];

/** The read-workspace allow-list the Component placements need. */
const COMPONENT_ALLOW = { workspaceRoot: ".tmp/ws-spec", filesystem: ["read" as const] };

const number = z.object({ value: z.number() });

/**
 * Every kind of one pair of Tools, named alike in each kind so a test compares them call for call:
 * `echo` finishes with its input's `value` (output schema: an integer), and `spin` runs until the call ends.
 * `place(kind)` is what a session of that kind takes; `reached(kind, session, call)` resolves once the
 * placement is running `call`; `runs(kind)` counts the functions run and HTTP requests served of that kind.
 * `allow` is the allow-list entry a Brain needs for all of them; `await using` stops their servers.
 */
export function toolKinds(): {
  allow: { net: string[]; workspaceRoot: string; filesystem: "read"[] };
  place(kind: Kind): PlacedTool[];
  reached(kind: Kind, session: BrainSession, call: number): Promise<void>;
  runs(kind: Kind): number;
  [Symbol.asyncDispose](): Promise<void>;
} {
  const counted = new Map<Kind, number>();
  const count = (kind: Kind) => counted.set(kind, (counted.get(kind) ?? 0) + 1);
  const arrivals = new Map<Kind, PromiseWithResolvers<void>>();
  const arrival = (kind: Kind) => arrivals.get(kind) ?? arrivals.set(kind, Promise.withResolvers()).get(kind)!;
  const arrived = (kind: Kind) => {
    count(kind);
    arrival(kind).resolve();
  };

  const options = z.object({ kind: z.enum(["in-process", "extension"]) });
  const echo = tool({
    name: "echo",
    description: "Finishes with the value it is given.",
    input: number,
    output: z.number().int(),
    options,
    run: ({ value }, ctx) => (count(ctx.options.kind), ctx.finish(value)),
  });
  const spin = tool({
    name: "spin",
    description: "Runs until the call ends.",
    input: z.object({}),
    options,
    run: (_input, ctx) => arrived(ctx.options.kind),
  });

  const extension = toolExtension({ tools: [echo({ kind: "extension" }), spin({ kind: "extension" })] });
  const extensionServer = serve(extension.fetch);
  const api = serve(async (request) => {
    const v1 = new URL(request.url).pathname.startsWith("/v1/");
    if (new URL(request.url).pathname.endsWith("/spin")) {
      arrived(v1 ? "http" : "http_json");
      await new Promise((resolve) => request.signal.addEventListener("abort", resolve, { once: true }));
      return new Response(null, { status: 499 });
    }
    count(v1 ? "http" : "http_json");
    return Response.json((await request.json()).value);
  });

  // The probe Component finishes with its input as the Outcome: the input schema turns { value } into one.
  const componentEcho = tool({
    name: "echo",
    description: "Finishes with the value it is given.",
    input: number.transform(({ value }) => ({ status: "ok", value })),
    output: z.number().int(),
    implementation: component(PROBE),
  });
  const componentSpin = tool({
    name: "spin",
    description: "Runs until the call ends.",
    input: z.object({}),
    implementation: component(PROBE),
  });
  const descriptor = (name: string, path: string) =>
    tool({
      name,
      description: `Calls ${path}.`,
      input: name === "echo" ? number : z.object({}),
      ...(name === "echo" ? { output: z.number().int() } : {}),
      implementation: () => ({ type: "http_json", method: "POST", path }),
    });
  const apiEnv = httpEnv({ name: "api", baseUrl: api.url });
  const v1 = (name: string) =>
    tool({
      name,
      description: `Posts to /v1/${name}.`,
      input: name === "echo" ? number : z.object({}),
      ...(name === "echo" ? { output: z.number().int() } : {}),
      implementation: http(`${api.url}/v1/${name}`),
    });
  const appEnv = extensionEnv({ name: "app-http", url: extensionServer.url });

  return {
    allow: { net: [extensionServer.host, api.host], ...COMPONENT_ALLOW, filesystem: ["read"] },
    place(kind) {
      switch (kind) {
        case "in-process":
          return [echo({ kind }), spin({ kind })];
        case "extension":
          return [echo({ env: appEnv, kind }), spin({ env: appEnv, kind })];
        case "component":
          return [componentEcho({ env: reader }), componentSpin({ env: reader })];
        case "http_json":
          return [descriptor("echo", "/echo")({ env: apiEnv }), descriptor("spin", "/spin")({ env: apiEnv })];
        case "http":
          return [v1("echo")(), v1("spin")()];
      }
    },
    async reached(kind, session, call) {
      if (kind === "component") {
        // The probe's spin emits before it loops.
        await untilRecord(session, (record) => record.kind === "tool_event" && record.call === call);
        return;
      }
      await arrival(kind).promise;
      arrivals.delete(kind);
    },
    runs: (kind) => counted.get(kind) ?? 0,
    async [Symbol.asyncDispose]() {
      await extensionServer[Symbol.asyncDispose]();
      await api[Symbol.asyncDispose]();
    },
  };
}
