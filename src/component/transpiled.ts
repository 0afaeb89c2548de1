import { permissionFlags } from "../env/grants.ts";
import { BrainError } from "../outcome/errors.ts";
import { CHILD_RUN_FLAGS, denoExecutable } from "./deno_child.ts";

/** What a cache entry holds besides the files themselves. */
export interface TranspiledMeta {
  /** Interfaces the Component imports, without versions. */
  imports: string[];
  /** Interfaces the Component exports, with versions. */
  exports: string[];
  /** File name of the glue module; it exports `instantiate(getCoreModule, imports, instantiateCore)`. */
  glue: string;
  /** File names of the core modules. */
  modules: string[];
}

/** A transpiled Component in the on-disk cache. */
export interface Transpiled {
  /** SHA-256 of the Component's bytes, in hex. */
  hash: string;
  /** Absolute path of the cache entry holding the glue and the core modules. */
  dir: string;
  /** The entry's description. */
  meta: TranspiledMeta;
}

/** Changes whenever the transpiler or its options change, so old entries are never read. */
const TRANSPILER = "jco-1.11.2-sync-1";
const MAIN = new URL("./transpile_main.ts", import.meta.url).href;
/** Longest a transpile may take: a Component that makes jco hang is refused, not waited for. */
const TRANSPILE_TIMEOUT_MS = 120_000;
const known = new Map<string, Promise<Transpiled>>();

/**
 * The transpiled form of a Component, from this process's memory, the cache
 * folder, or a transpile child process (jco never loads into this process).
 * Fails with `invalid_tool` when the bytes are not a Component.
 */
export function transpiled(url: URL, bytes: Uint8Array, cacheDir: string): Promise<Transpiled> {
  return digest(bytes).then((hash) => {
    const dir = `${cacheDir}/${TRANSPILER}/${hash}`;
    let entry = known.get(dir);
    if (!entry) {
      entry = readEntry(dir).then((meta) => meta ?? transpileInChild(url, bytes, dir, cacheDir))
        .then((meta) => ({ hash, dir, meta }));
      known.set(dir, entry);
      entry.catch(() => known.delete(dir));
    }
    return entry;
  });
}

async function digest(bytes: Uint8Array): Promise<string> {
  return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes as Uint8Array<ArrayBuffer>)).toHex();
}

/** The entry's meta when this process may read the cache folder and the entry is complete. */
async function readEntry(dir: string): Promise<TranspiledMeta | undefined> {
  if (Deno.permissions.querySync({ name: "read", path: dir }).state !== "granted") return undefined;
  try {
    return JSON.parse(await Deno.readTextFile(`${dir}/meta.json`));
  } catch {
    return undefined;
  }
}

async function transpileInChild(url: URL, bytes: Uint8Array, dir: string, cacheDir: string): Promise<TranspiledMeta> {
  const child = new Deno.Command(denoExecutable("Transpiling a Component"), {
    args: [...CHILD_RUN_FLAGS, ...permissionFlags({ read: true, write: [cacheDir], env: true }), MAIN, dir],
    env: { DENO_NO_UPDATE_CHECK: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
    signal: AbortSignal.timeout(TRANSPILE_TIMEOUT_MS),
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(bytes).then(() => writer.close()).catch(() => {});
  const { stdout, stderr, success, signal } = await child.output();
  if (signal === "SIGTERM") {
    throw new BrainError("timeout", `transpiling ${url.href} took longer than ${TRANSPILE_TIMEOUT_MS} ms`);
  }
  const text = new TextDecoder().decode(stdout).trim().split("\n").at(-1) ?? "";
  let result: TranspiledMeta | { error: string };
  try {
    result = JSON.parse(text);
  } catch {
    throw new BrainError(
      "unsupported_runtime",
      `the transpile process for ${url.href} failed (${success ? "no result" : "exit"}): ${
        new TextDecoder().decode(stderr).slice(-2000)
      }`,
    );
  }
  if ("error" in result) throw new BrainError("invalid_tool", `${url.href} is not a valid Component: ${result.error}`);
  return result;
}
