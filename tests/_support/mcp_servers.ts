import { mcpEnv } from "../../src/mcp/mod.ts";
import type { AllowList } from "../../mod.ts";
import { scratchDir } from "./scratch.ts";

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
    args: ["run", new URL("../mcp/fixtures/counting_server.ts", import.meta.url).pathname],
    filesystem: { workspace: "write" },
  });
}

/** What a Brain must allow for {@linkcode counting}, with workspaces under a fresh directory in `.tmp`. */
export function countingAllow(): AllowList {
  return { run: [DENO], workspaceRoot: scratchDir("mcp"), filesystem: ["write"] };
}
