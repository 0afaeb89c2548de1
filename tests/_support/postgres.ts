import { PostgresJournal } from "../../src/journal/postgres.ts";

/**
 * A private PostgreSQL for one test file: `initdb` into a fresh folder under
 * `.tmp/` (as the `postgres` user when the tests run as root), a server on
 * 127.0.0.1 and a free port, stopped by its process id. `await using` stops
 * it and removes its folder.
 */
const BIN = "/usr/lib/postgresql/15/bin";

/** A running private PostgreSQL. */
export interface PrivatePostgres {
  /** A connection URL for its `postgres` database as the `postgres` superuser. */
  readonly url: string;
  /** Its data folder. */
  readonly dir: string;
  /** Stops the server (SIGINT to its postmaster: fast shutdown) and waits for it to exit. */
  stop(): Promise<void>;
  /**
   * Stops the server as {@linkcode stop} does, runs `whileDown` (if given) while
   * it is down, then starts it again on the same folder and port, resolving once
   * it accepts connections: the database restarted under its clients.
   */
  restart(whileDown?: () => Promise<void>): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a private PostgreSQL; fails with the server's own output if it does not come up within 30 s. */
export async function startPostgres(): Promise<PrivatePostgres> {
  const root = `${Deno.cwd()}/.tmp/postgres-${crypto.randomUUID()}`;
  await Deno.mkdir(root, { recursive: true });
  await Deno.chmod(root, 0o777);
  const dir = `${root}/data`;
  // The folder we just created is ours: its owner is this process's user, without --allow-sys.
  const asRoot = (await Deno.stat(root)).uid === 0;
  const init = await new Deno.Command(asRoot ? "runuser" : `${BIN}/initdb`, {
    args: [
      ...(asRoot ? ["-u", "postgres", "--", `${BIN}/initdb`] : []),
      "-D",
      dir,
      "-A",
      "trust",
      "-U",
      "postgres",
      "-E",
      "UTF8",
      "--locale=C",
      "--no-sync",
    ],
    stdout: "piped",
    stderr: "piped",
    env: { LANG: "C", LC_ALL: "C" },
  }).output();
  if (!init.success) throw new Error(`initdb failed: ${new TextDecoder().decode(init.stderr)}`);
  const port = freePort();
  let server = launch(asRoot, dir, port);
  let stopped: Promise<void> | undefined;
  // A test run filtered past the file's stop still stops the server when the process ends.
  const stopNow = () => {
    if (stopped) return;
    const pid = postmasterPid(dir);
    if (pid !== undefined) {
      new Deno.Command("kill", { args: ["-INT", String(pid)] }).outputSync();
      waitForExit(pid, 10_000);
    }
    try {
      Deno.removeSync(root, { recursive: true });
    } catch {
      // A server that outlived the wait still holds the folder; nothing more can be done while the process ends.
    }
  };
  globalThis.addEventListener("unload", stopNow);
  /** Fast shutdown of the running postmaster (SIGINT, by the id it wrote); resolves once it exited. */
  const shutdown = async () => {
    const pid = postmasterPid(dir);
    if (pid !== undefined) await new Deno.Command("kill", { args: ["-INT", String(pid)] }).output();
    else server.process.kill("SIGKILL");
    await server.exited;
  };
  const stop = () =>
    stopped ??= (async () => {
      globalThis.removeEventListener("unload", stopNow);
      await shutdown();
      await Deno.remove(root, { recursive: true }).catch(() => {});
    })();
  const restart = async (whileDown?: () => Promise<void>) => {
    await shutdown();
    await whileDown?.();
    server = launch(asRoot, dir, port);
    await server.ready.catch(async (error) => {
      await stop();
      throw error;
    });
  };
  try {
    await server.ready;
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    dir,
    stop,
    restart,
    [Symbol.asyncDispose]: stop,
  };
}

/** A postmaster being started: its process, ready once it accepts connections (or failed with its output). */
interface Postmaster {
  process: Deno.ChildProcess;
  ready: Promise<void>;
  /** Resolves once the process exited and its output was read. */
  exited: Promise<void>;
}

/** Starts a postmaster on `dir` at `port`; its `ready` fails with the server's own output if it is not up in 30 s. */
function launch(asRoot: boolean, dir: string, port: number): Postmaster {
  const process = new Deno.Command(asRoot ? "runuser" : `${BIN}/postgres`, {
    args: [
      ...(asRoot ? ["-u", "postgres", "--", `${BIN}/postgres`] : []),
      "-D",
      dir,
      "-p",
      String(port),
      "-c",
      "listen_addresses=127.0.0.1",
      "-c",
      "unix_socket_directories=",
      "-c",
      "fsync=off",
      "-c",
      "max_connections=200",
    ],
    stdout: "null",
    stderr: "piped",
    env: { LANG: "C", LC_ALL: "C" },
  }).spawn();
  const log: string[] = [];
  const ready = Promise.withResolvers<void>();
  const reading = (async () => {
    const decoder = new TextDecoderStream();
    let buffer = "";
    for await (const text of process.stderr.pipeThrough(decoder)) {
      buffer += text;
      const lines = buffer.split("\n");
      buffer = lines.pop()!;
      for (const line of lines) {
        log.push(line);
        if (line.includes("ready to accept connections")) ready.resolve();
      }
    }
  })();
  const status = process.status.then((status) => {
    ready.reject(new Error(`postgres exited (${status.code}) before it was ready:\n${log.join("\n")}`));
  });
  const deadline = setTimeout(() => ready.reject(new Error(`postgres not ready in 30 s:\n${log.join("\n")}`)), 30_000);
  ready.promise.catch(() => {}).finally(() => clearTimeout(deadline));
  return { process, ready: ready.promise, exited: status.then(() => reading.catch(() => {})) };
}

/** Blocks until process `pid` is gone or `ms` pass: an unload handler cannot await. */
function waitForExit(pid: number, ms: number): void {
  const pause = new Int32Array(new SharedArrayBuffer(4));
  const until = Date.now() + ms;
  while (Date.now() < until && new Deno.Command("kill", { args: ["-0", String(pid)] }).outputSync().success) {
    Atomics.wait(pause, 0, 0, 10);
  }
}

/** The postmaster's process id, from the first line of `postmaster.pid`. */
function postmasterPid(dir: string): number | undefined {
  try {
    const pid = Number(Deno.readTextFileSync(`${dir}/postmaster.pid`).split("\n")[0]);
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function freePort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const { port } = listener.addr as Deno.NetAddr;
  listener.close();
  return port;
}

/** One test file's private PostgreSQL, handing each test a journal of its own. */
export interface PostgresPerFile {
  /** The server's `postgres` database URL, as the `postgres` superuser. */
  readonly url: string;
  /** Opens a journal on a schema no other journal has used: one test's isolated PostgreSQL journal. */
  journal(): Promise<PostgresJournal>;
}

/**
 * Starts one private PostgreSQL for the calling test file, which stops it when its tests end (`unload`). Call it
 * at the module's top level: started outside every test, the server's process and pipes are no test's leak. A
 * fresh schema per test isolates the tests at the cost of creating its tables, not of a server or a database.
 */
export async function postgresPerFile(): Promise<PostgresPerFile> {
  const server = await startPostgres();
  return {
    url: server.url,
    journal: () => PostgresJournal.open(server.url, { schema: `t_${crypto.randomUUID().replaceAll("-", "")}` }),
  };
}
