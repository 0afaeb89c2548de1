/**
 * `deno task serve`: a Brain server on 127.0.0.1. The port comes from `--port`,
 * else `BRAIN_PORT`, else 8787; `--port 0` picks a free one. It prints
 * `Brain listening on URL` once it accepts connections and stops on SIGINT or SIGTERM.
 * With `--path` (or `BRAIN_PATH`) sessions live in that Deno KV file, else in memory.
 */
import { parseArgs } from "node:util";
import { BrainError } from "../outcome/errors.ts";
import { serveBrain } from "./server.ts";

const { values } = parseArgs({ args: Deno.args, options: { port: { type: "string" }, path: { type: "string" } } });
const raw = values.port ?? Deno.env.get("BRAIN_PORT") ?? "8787";
const port = Number(raw);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  throw new BrainError("invalid_argument", `the port must be an integer from 0 to 65535, got ${raw}`);
}

const path = values.path ?? Deno.env.get("BRAIN_PATH");
const folder = path?.includes("/") ? path.slice(0, path.lastIndexOf("/")) : undefined;
if (folder) await Deno.mkdir(folder, { recursive: true });
const server = await serveBrain({ port, path });
console.log(`Brain listening on ${server.url}`);
const stop = async () => {
  await server.shutdown();
  Deno.exit(0);
};
Deno.addSignalListener("SIGINT", stop);
Deno.addSignalListener("SIGTERM", stop);
