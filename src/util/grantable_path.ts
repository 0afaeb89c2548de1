/**
 * True for a path a child process can be granted: a non-empty string without NUL, lone surrogates or commas
 * (Deno's `--allow-read`/`--allow-write` split their list at every comma, with no escape for one).
 */
export function isGrantablePath(path: unknown): path is string {
  return typeof path === "string" && path !== "" && !/[\0,]/.test(path) && path.isWellFormed();
}
