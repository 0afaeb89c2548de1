/**
 * A fresh directory under `.tmp/` for one test file's files, removed when the
 * test process ends.
 */
export function scratchDir(name: string): string {
  const dir = `.tmp/${name}-${crypto.randomUUID()}`;
  Deno.mkdirSync(dir, { recursive: true });
  globalThis.addEventListener("unload", () => Deno.removeSync(dir, { recursive: true }));
  return dir;
}
