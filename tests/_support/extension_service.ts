import type { Environment, PlacedTool } from "../../mod.ts";
import { extensionEnv, toolExtension } from "../../src/extension/mod.ts";
import { serve } from "./serve.ts";

/** Options of {@linkcode extensionService}. */
export interface ExtensionServiceOptions {
  /** The extension's request lifetime in ms; 5 s by default. */
  lifetimeMs?: number;
  /** Rewrites each call's invocation before the extension reads it, as a skewed or hostile proxy would. */
  rewrite?: (invocation: Record<string, unknown>) => Record<string, unknown>;
}

/**
 * An Application tool extension serving `tools` on 127.0.0.1, and the Environment that places Tools in it;
 * `allow` is the allow-list entry a Brain needs for it. `await using` stops the server.
 */
export function extensionService(tools: PlacedTool[], { lifetimeMs = 5_000, rewrite }: ExtensionServiceOptions = {}): {
  env: Environment;
  allow: { net: string[] };
  [Symbol.asyncDispose](): Promise<void>;
} {
  const extension = toolExtension({ tools, lifetimeMs });
  const server = serve(async (request) => {
    const url = new URL(request.url);
    if (!rewrite || url.pathname !== "/calls") return extension.fetch(request);
    const invocation = rewrite(await request.json());
    return extension.fetch(
      new Request(request.url, { method: "POST", headers: request.headers, body: JSON.stringify(invocation) }),
    );
  });
  return {
    env: extensionEnv({ name: "app-http", url: server.url }),
    allow: { net: [server.host] },
    [Symbol.asyncDispose]: () => server[Symbol.asyncDispose](),
  };
}
