import assert from "node:assert/strict";
import { z } from "zod";
import { Brain, tool } from "../../mod.ts";
import { lines } from "../_support/lines.ts";
import { scratchDir } from "../_support/scratch.ts";
import { withDeadline } from "../_support/deadline.ts";
import { SERVE_PERMISSIONS, SERVER_TOKEN } from "../_support/server_process.ts";

const dir = scratchDir("fd_exhaustion_test");

const echo = tool({
  name: "echo",
  description: "Finishes with its input.",
  input: z.object({ n: z.number() }),
  run: ({ n }, ctx) => ctx.finish(n),
});

Deno.test("a Brain server that runs out of file descriptors keeps running: once the connections holding them close, its host's calls run again and a new host attaches", async () => {
  // The server process may hold 96 descriptors; the test opens connections to it until it can accept no more.
  const server = new Deno.Command("sh", {
    args: [
      "-c",
      'ulimit -n 96; exec "$0" "$@"',
      Deno.execPath(),
      "run",
      "--quiet",
      ...SERVE_PERMISSIONS,
      "src/host/server/serve.ts",
      "--port",
      "0",
      "--path",
      `${dir}/brain.kv`,
    ],
    env: { BRAIN_SERVER_TOKEN: SERVER_TOKEN },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(60_000),
  }).spawn();
  const said = lines(server.stdout);
  const stderr = new Response(server.stderr).text();
  let exited = false;
  const status = server.status.then((status) => (exited = true, status));
  const url = /listening on (\S+)/.exec((await said.next()).value ?? "")?.[1] ?? "";
  const brain = new Brain({
    url,
    serverToken: SERVER_TOKEN,
    token: "t",
    host: "h",
    pingIntervalMs: 300,
    maxReconnectDelayMs: 200,
  });
  const flood: Deno.TcpConn[] = [];
  try {
    const session = await brain.sessions.create({ tools: [echo()] });
    assert.equal((await session.call("echo", { n: 1 })).cause, "finish");
    const port = Number(new URL(url).port);
    for (let n = 0; n < 300 && !exited; n++) {
      // A connect the server never accepts waits in its backlog, or for the backlog to have room.
      const connecting = Deno.connect({ hostname: "127.0.0.1", port });
      const conn = await withDeadline(connecting, "a connection", 1_000).catch(() => undefined);
      if (!conn) {
        connecting.then((late) => late.close(), () => {});
        break; // It accepts no more: its descriptors ran out.
      }
      flood.push(conn);
    }
    assert.ok(flood.length < 300, "the server ran out of descriptors");
    flood.splice(0).forEach((conn) => conn.close());
    let served: string | undefined;
    for (let attempt = 0; attempt < 30 && served !== "finish" && !exited; attempt++) {
      served = await session.call("echo", { n: 2 }, { timeoutMs: 1_000 }).then(
        (end) => end.cause,
        (error) => error.code,
      );
    }
    if (exited) assert.fail(`the server process exited: ${await stderr}`);
    assert.equal(served, "finish", "the host's calls run again");
    // A host that connects only now needs the server to listen again (it backs off up to a second meanwhile).
    let attached: string | undefined;
    for (let attempt = 0; attempt < 50 && attached !== "finish"; attempt++) {
      const late = new Brain({ url, serverToken: SERVER_TOKEN, token: "t2", host: "h2" });
      try {
        const other = await late.sessions.create({ tools: [echo()] });
        attached = (await other.call("echo", { n: 3 })).cause;
      } catch (error) {
        attached = String(error);
        await new Promise((resolve) => setTimeout(resolve, 100));
      } finally {
        await late.close();
      }
    }
    assert.equal(attached, "finish", "a new host attaches and its call runs");
  } finally {
    flood.forEach((conn) => conn.close());
    await brain.close();
    if (!exited) server.kill("SIGTERM");
    await status;
    await said.return(undefined);
    await stderr;
  }
});
