import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, httpTool } from "../../mod.ts";
import { serve } from "../_support/serve.ts";

Deno.test("an HTTP Tool's endless response body ends the call payload_too_large, read no further than the limit", async () => {
  let sent = 0;
  await using server = serve(() =>
    new Response(
      new ReadableStream<Uint8Array>({
        pull(controller) {
          if (sent > 256 * 1024 * 1024) return controller.close();
          sent += 64 * 1024;
          controller.enqueue(new Uint8Array(64 * 1024).fill(32));
        },
      }),
    )
  );
  const endless = httpTool({ name: "endless", description: "Never stops.", input: z.object({}), url: server.url });
  await using brain = new Brain({ allow: { net: [server.host] } });
  const session = await brain.sessions.create({ tools: [endless()] });
  const end = await session.call("endless", {}, { timeoutMs: 30_000 });
  assert.equal(end.outcome.status === "error" && end.outcome.error.code, "payload_too_large");
  assert.ok(sent < 64 * 1024 * 1024, `Brain stopped reading early (${sent} bytes sent)`);
});
