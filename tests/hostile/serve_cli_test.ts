import assert from "node:assert/strict";
import { SERVE_NET_ENV, serveScript } from "../_support/server_process.ts";
import { serveBrain } from "../../src/host/server/mod.ts";
import { BrainError } from "../../mod.ts";

const DIR = ".tmp/hostile_serve";

Deno.test("hostile brain serve: ports, token files, journal folders, model keys and limits it cannot use exit 2 before listening", async () => {
  await Deno.mkdir(DIR, { recursive: true });
  const fifo = `${DIR}/tokens.fifo`;
  await Deno.remove(fifo).catch(() => {});
  assert.ok((await new Deno.Command("mkfifo", { args: [fifo] }).output()).success);
  await Deno.writeTextFile(`${DIR}/huge.json`, " ".repeat(2 * 1024 * 1024) + "{}");
  await Deno.writeTextFile(`${DIR}/wide.json`, JSON.stringify({ app: "tökén" }));
  await Deno.writeTextFile(`${DIR}/a_file`, "");
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const permissions = [...SERVE_NET_ENV, `--allow-read=${DIR},/dev/zero`, `--allow-write=${DIR}`];
  const bad: [string, string[], Record<string, string>][] = [
    ["a hexadecimal port", [], { BRAIN_PORT: "0x50" }],
    ["an exponent port", ["--port", "1e3"], {}],
    ["a port with a space", ["--port", " 0"], {}],
    ["a port in use", ["--port", String((taken.addr as Deno.NetAddr).port)], {}],
    ["host tokens from /dev/zero", ["--port", "0", "--host-tokens", "/dev/zero"], {}],
    ["host tokens from a FIFO", ["--port", "0", "--host-tokens", fifo], {}],
    ["a 2 MiB host tokens file", ["--port", "0", "--host-tokens", `${DIR}/huge.json`], {}],
    ["a host token of non-ASCII", ["--port", "0", "--host-tokens", `${DIR}/wide.json`], {}],
    ["a journal below a file", ["--port", "0", "--path", `${DIR}/a_file/x/brain.kv`], {}],
    ["a model key with a control character", ["--port", "0"], {
      BRAIN_MODEL_URL: "http://127.0.0.1:9/v1/",
      BRAIN_MODEL: "m",
      BRAIN_MODEL_KEY: "key\x01",
    }],
    ["a limit named constructor", ["--port", "0", "--limits", "constructor=5"], {}],
    ["a limit named toString", ["--port", "0", "--limits", "toString=5"], {}],
    ["an operator token of 100 000 characters", ["--port", "0"], { BRAIN_SERVER_TOKEN: "t".repeat(100_000) }],
  ];
  const exits = await Promise.all(bad.map(async ([what, args, env]) => {
    await using refused = serveScript(args, { permissions, env });
    const line = await refused.line();
    return `${what}: ${line === undefined ? "" : `said ${line} and `}exited ${(await refused.process.status).code}`;
  }));
  assert.deepEqual(exits, bad.map(([what]) => `${what}: exited 2`));
  await Deno.remove(DIR, { recursive: true });
});

Deno.test("hostile serveBrain: an address it cannot listen on is a BrainError, never a bare Deno error", async () => {
  using taken = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const addresses: [string, unknown, unknown][] = [
    ["a port in use", "127.0.0.1", (taken.addr as Deno.NetAddr).port],
    ["port 65536", "127.0.0.1", 65536],
    ["port -1", "127.0.0.1", -1],
    ["port 1.5", "127.0.0.1", 1.5],
    ["port NaN", "127.0.0.1", NaN],
    ["a hostname that is no address", "no such host.invalid", 0],
    ["a hostname of a number", 5, 0],
  ];
  for (const [what, hostname, port] of addresses) {
    await assert.rejects(
      serveBrain({ serverToken: "operator-secret", hostname: hostname as string, port: port as number }),
      (error) => error instanceof BrainError && error.code === "invalid_argument",
      what,
    );
  }
});
