import { mcpEnv } from "../../src/mcp/mod.ts";
// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";
import type { AllowList } from "../../mod.ts";

/** The Deno that starts the test servers: this very one, never `deno` from PATH. */
export const DENO = Deno.execPath();

/** The reference server, run by Deno from its npm package's JS entry. */
export const EVERYTHING = "npm:@modelcontextprotocol/server-everything@2026.8.31";

/** Variables server-everything reads at import time; its process is granted exactly these. */
export const EVERYTHING_ENV = ["GZIP_MAX_FETCH_SIZE", "GZIP_MAX_FETCH_TIME_MILLIS", "GZIP_ALLOWED_DOMAINS"];

/** server-everything over stdio, started by Deno with only its grant (a first run may download it). */
export function everything(tools?: string[]) {
  return mcpEnv({
    name: "everything",
    command: DENO,
    args: ["run", EVERYTHING, "stdio"],
    env: EVERYTHING_ENV,
    timeoutMs: 60_000,
    ...(tools ? { tools } : {}),
  });
}

/** What a Brain must allow for {@linkcode everything}. */
export const EVERYTHING_ALLOW: AllowList = { run: [DENO], env: EVERYTHING_ENV };

/** The counting fixture server over stdio, with a writable workspace as its working directory. */
export function counting() {
  return mcpEnv({
    name: "counting",
    command: DENO,
    args: ["run", new URL("./fixtures/counting_server.ts", import.meta.url).pathname],
    filesystem: { workspace: "write" },
  });
}

/** What a Brain must allow for {@linkcode counting}, with workspaces under a fresh directory in `.tmp`. */
export async function countingAllow(): Promise<AllowList> {
  await Deno.mkdir(".tmp", { recursive: true });
  const workspaceRoot = await Deno.makeTempDir({ dir: ".tmp", prefix: "mcp-" });
  return { run: [DENO], workspaceRoot, filesystem: ["write"] };
}

/** Wraps a client transport to keep every message it sends and receives, in wire order. */
export function recording<T extends Transport>(
  inner: T,
): { transport: Transport; sent: JSONRPCMessage[]; received: JSONRPCMessage[] } {
  const sent: JSONRPCMessage[] = [];
  const received: JSONRPCMessage[] = [];
  const transport: Transport = {
    start: () => inner.start(),
    send: (message, options) => {
      sent.push(message);
      return inner.send(message, options);
    },
    close: () => inner.close(),
    setProtocolVersion: (version) => inner.setProtocolVersion?.(version),
    get sessionId() {
      return inner.sessionId;
    },
  };
  inner.onmessage = (message, extra) => {
    received.push(message);
    transport.onmessage?.(message, extra);
  };
  inner.onclose = () => transport.onclose?.();
  inner.onerror = (error) => transport.onerror?.(error);
  return { transport, sent, received };
}

/** The progress notifications and the response of the last `tools/call` of `tool`, in the order they arrived. */
export function arrivals({ sent, received }: { sent: JSONRPCMessage[]; received: JSONRPCMessage[] }, tool: string) {
  const request = sent.findLast((message) =>
    "method" in message && message.method === "tools/call" && message.params?.name === tool
  ) as { id: unknown; params: { _meta?: { progressToken?: unknown } } };
  const { id, params: { _meta } } = request;
  const token = _meta?.progressToken;
  return received.flatMap((message) => {
    if ("method" in message && message.method === "notifications/progress") {
      return message.params?.progressToken === token ? [`progress ${message.params?.progress}`] : [];
    }
    return "id" in message && message.id === id && !("method" in message) ? ["response"] : [];
  });
}
