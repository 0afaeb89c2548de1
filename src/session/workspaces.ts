import { isAbsolute, relative, resolve } from "node:path";
import { BrainError } from "../outcome/errors.ts";
import { checkName, checkSessionId } from "../util/names.ts";
import { errorText } from "../util/error_text.ts";

/**
 * Makes (when missing) the workspace of binding `name` in session `sessionId`
 * under `root`, and returns its real path, checked to lie inside the real root
 * both before the folder is made and after symlinks are resolved.
 */
export async function makeWorkspace(root: string, sessionId: string, name: string): Promise<string> {
  const path = inside(root, checkSessionId(sessionId), checkName("an Environment name", name));
  const real = await unusable(root, async () => {
    await Deno.mkdir(path, { recursive: true });
    return await Deno.realPath(path);
  });
  inside(await Deno.realPath(root), relative(await Deno.realPath(root), real));
  return real;
}

/** Removes the workspace at `path` (a path {@linkcode makeWorkspace} returned) after checking it lies inside `root`. */
export async function removeWorkspace(root: string, path: string): Promise<void> {
  const realRoot = await unusable(root, () => Deno.realPath(root));
  const inRoot = inside(realRoot, relative(realRoot, path));
  await unusable(root, () => Deno.remove(inRoot, { recursive: true }).catch(ignoreMissing));
}

/** Removes every workspace of session `sessionId` under `root`: the session was deleted, or its id is new again. */
export async function removeSessionWorkspaces(root: string | undefined, sessionId: string): Promise<void> {
  if (root === undefined) return;
  const path = inside(root, checkSessionId(sessionId));
  await unusable(root, () => Deno.remove(path, { recursive: true }).catch(ignoreMissing));
}

/** `parent` joined with `parts`, resolved; throws `permission_denied` unless it lies strictly inside `parent`. */
function inside(parent: string, ...parts: string[]): string {
  const base = resolve(parent);
  const path = resolve(base, ...parts);
  const below = relative(base, path);
  if (below === "" || below === ".." || below.startsWith("../") || isAbsolute(below)) {
    throw new BrainError("permission_denied", `a workspace must lie inside the workspace root ${base}`, {
      details: { root: base },
    });
  }
  return path;
}

/**
 * `work` on the file system under `root`; its failure (a root that is a file, cannot be
 * created or is not permitted) as `setup_failed` naming the root, with the cause.
 */
async function unusable<T>(root: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof BrainError) throw error;
    throw new BrainError("setup_failed", `the workspace root ${root} cannot hold workspaces: ${errorText(error)}`, {
      cause: error,
      details: { root },
    });
  }
}

function ignoreMissing(error: unknown): void {
  if (!(error instanceof Deno.errors.NotFound)) throw error;
}
