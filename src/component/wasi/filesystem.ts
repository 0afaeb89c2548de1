/**
 * The read-only `wasi:filesystem` a Component sees inside its Worker: one
 * preopened directory, `/`, which is the binding's session workspace.
 *
 * Two fences keep a guest inside it. Here, every path is resolved (lexically,
 * then through every symlink with `realPath`) and refused with `not-permitted` when
 * it leaves the workspace; Deno does not follow symlinks when it checks a path,
 * so this fence is what stops a link that points out. Around it, the Worker's
 * Deno permissions allow reading the workspace and nothing else.
 */

type ErrorCode =
  | "access"
  | "loop"
  | "no-entry"
  | "not-directory"
  | "not-permitted"
  | "read-only"
  | "unsupported"
  | "io";
type DescriptorType = "directory" | "regular-file" | "symbolic-link" | "unknown";
type WasiResult<T> = { tag: "ok"; val: T } | { tag: "err"; val: ErrorCode };

const ok = <T>(val: T): WasiResult<T> => ({ tag: "ok", val });
const err = (val: ErrorCode): WasiResult<never> => ({ tag: "err", val });

/** The import objects for `wasi:filesystem/types` and `wasi:filesystem/preopens`. */
export function workspaceFilesystem(root: string | undefined): { types: object; preopens: object } {
  const inside = (path: string) => root !== undefined && (path === root || path.startsWith(`${root}/`));

  function errorCode(error: unknown): ErrorCode {
    if (error instanceof Deno.errors.NotFound) return "no-entry";
    if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) return "access";
    if (error instanceof Deno.errors.NotADirectory) return "not-directory";
    return "io";
  }

  function typeOf(info: { isDirectory: boolean; isFile: boolean; isSymlink: boolean }): DescriptorType {
    return info.isDirectory ? "directory" : info.isFile ? "regular-file" : info.isSymlink ? "symbolic-link" : "unknown";
  }

  class DirectoryEntryStream {
    #entries: { type: DescriptorType; name: string }[];
    constructor(entries: { type: DescriptorType; name: string }[]) {
      this.#entries = entries;
    }
    readDirectoryEntry(): WasiResult<{ type: DescriptorType; name: string } | undefined> {
      return ok(this.#entries.shift());
    }
  }

  class Descriptor {
    #path: string;
    constructor(path: string) {
      this.#path = path;
    }

    openAt(
      pathFlags: { symlinkFollow?: boolean },
      path: string,
      openFlags: { create?: boolean; directory?: boolean; exclusive?: boolean; truncate?: boolean },
      flags: { write?: boolean; mutateDirectory?: boolean },
    ): WasiResult<Descriptor> {
      if (openFlags.create || openFlags.exclusive || openFlags.truncate || flags.write || flags.mutateDirectory) {
        return err("read-only");
      }
      const resolved = this.#resolve(path, pathFlags.symlinkFollow === true);
      if (resolved.tag === "err") return resolved;
      try {
        const info = Deno.statSync(resolved.val);
        if (openFlags.directory && !info.isDirectory) return err("not-directory");
      } catch (error) {
        return err(errorCode(error));
      }
      return ok(new Descriptor(resolved.val));
    }

    readDirectory(): WasiResult<DirectoryEntryStream> {
      try {
        const entries = [...Deno.readDirSync(this.#path)]
          .map((entry) => ({ type: typeOf(entry), name: entry.name }))
          .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        return ok(new DirectoryEntryStream(entries));
      } catch (error) {
        return err(errorCode(error));
      }
    }

    getType(): WasiResult<DescriptorType> {
      try {
        return ok(typeOf(Deno.statSync(this.#path)));
      } catch (error) {
        return err(errorCode(error));
      }
    }

    stat(): WasiResult<object> {
      try {
        const info = Deno.statSync(this.#path);
        return ok({ type: typeOf(info), linkCount: BigInt(info.nlink ?? 1), size: BigInt(info.size) });
      } catch (error) {
        return err(errorCode(error));
      }
    }

    /** The real path of `path` below this descriptor, or `not-permitted` when it leaves the workspace. */
    #resolve(path: string, followFinal: boolean): WasiResult<string> {
      if (path.startsWith("/")) return err("not-permitted");
      const parts = this.#path.split("/");
      for (const part of path.split("/")) {
        if (part === "" || part === ".") continue;
        if (part === "..") parts.pop();
        else parts.push(part);
      }
      const lexical = parts.join("/") || "/";
      if (!inside(lexical)) return err("not-permitted");
      try {
        // Opening a symlink itself, as without symlink-follow, is refused like O_NOFOLLOW does.
        if (!followFinal && Deno.lstatSync(lexical).isSymlink) return err("loop");
        const real = Deno.realPathSync(lexical);
        return inside(real) ? ok(real) : err("not-permitted");
      } catch (error) {
        return err(errorCode(error));
      }
    }
  }

  return {
    types: { Descriptor, DirectoryEntryStream, filesystemErrorCode: () => undefined },
    preopens: { getDirectories: () => (root === undefined ? [] : [[new Descriptor(root), "/"]]) },
  };
}
