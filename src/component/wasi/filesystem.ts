/**
 * The `wasi:filesystem` a Component sees inside its sandbox: one preopened
 * directory, `/`, which is the binding's session workspace, writable only when
 * the grant says `write`.
 *
 * Two fences keep a guest inside it. Here, every path is resolved (lexically,
 * then through every symlink with `realPath`) and refused with `not-permitted` when
 * it leaves the workspace; Deno does not follow symlinks when it checks a path,
 * so this fence is what stops a link that points out. Around it, the sandbox's
 * Deno permissions allow reading (and writing) the workspace and nothing else.
 */
import { InputStream, OutputStream } from "./streams.ts";

type ErrorCode =
  | "access"
  | "exist"
  | "is-directory"
  | "loop"
  | "no-entry"
  | "not-directory"
  | "not-empty"
  | "not-permitted"
  | "read-only"
  | "invalid"
  | "unsupported"
  | "io";
type DescriptorType = "directory" | "regular-file" | "symbolic-link" | "unknown";
type WasiResult<T> = { tag: "ok"; val: T } | { tag: "err"; val: ErrorCode };
type PathFlags = { symlinkFollow?: boolean };
type OpenFlags = { create?: boolean; directory?: boolean; exclusive?: boolean; truncate?: boolean };
type DescriptorFlags = { read?: boolean; write?: boolean; mutateDirectory?: boolean };

const ok = <T>(val: T): WasiResult<T> => ({ tag: "ok", val });
const err = (val: ErrorCode): WasiResult<never> => ({ tag: "err", val });

function errorCode(error: unknown): ErrorCode {
  if (error instanceof Deno.errors.NotFound) return "no-entry";
  if (error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied) return "access";
  if (error instanceof Deno.errors.NotADirectory) return "not-directory";
  if (error instanceof Deno.errors.AlreadyExists) return "exist";
  if (error instanceof Deno.errors.IsADirectory) return "is-directory";
  if ((error as { code?: string }).code === "ENOTEMPTY") return "not-empty";
  return "io";
}

/** Closes `file` unless it is already closed. */
function closeQuietly(file: Deno.FsFile): void {
  try {
    file.close();
  } catch {
    // Closed at its end already.
  }
}

/** Runs `action`, turning a thrown Deno error into the WASI error code. */
function attempt<T>(action: () => T): WasiResult<T> {
  try {
    return ok(action());
  } catch (error) {
    return err(errorCode(error));
  }
}

function typeOf(info: { isDirectory: boolean; isFile: boolean; isSymlink: boolean }): DescriptorType {
  return info.isDirectory ? "directory" : info.isFile ? "regular-file" : info.isSymlink ? "symbolic-link" : "unknown";
}

function timestamp(date: Date | null) {
  if (!date) return undefined;
  const ms = date.getTime();
  return { seconds: BigInt(Math.floor(ms / 1000)), nanoseconds: (ms % 1000) * 1_000_000 };
}

function statOf(info: Deno.FileInfo) {
  return {
    type: typeOf(info),
    linkCount: BigInt(info.nlink ?? 1),
    size: BigInt(info.size),
    dataAccessTimestamp: timestamp(info.atime),
    dataModificationTimestamp: timestamp(info.mtime),
    statusChangeTimestamp: timestamp(info.ctime ?? null),
  };
}

/** The import objects for `wasi:filesystem/types` and `wasi:filesystem/preopens`. */
export function workspaceFilesystem(root: string | undefined, writable: boolean): { types: object; preopens: object } {
  const inside = (path: string) => root !== undefined && (path === root || path.startsWith(`${root}/`));

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
    #write: boolean;
    constructor(path: string, write: boolean) {
      this.#path = path;
      this.#write = write;
    }

    openAt(pathFlags: PathFlags, path: string, openFlags: OpenFlags, flags: DescriptorFlags): WasiResult<Descriptor> {
      const wantsWrite = Boolean(openFlags.create || openFlags.truncate || flags.write || flags.mutateDirectory);
      if (wantsWrite && !writable) return err("read-only");
      const resolved = openFlags.create
        ? this.#resolveNew(path, pathFlags.symlinkFollow === true)
        : this.#resolve(path, pathFlags.symlinkFollow === true);
      if (resolved.tag === "err") return resolved;
      const target = resolved.val;
      try {
        let info: Deno.FileInfo | undefined;
        try {
          info = Deno.statSync(target);
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound) || !openFlags.create) throw error;
        }
        if (info && openFlags.create && openFlags.exclusive) return err("exist");
        if (info?.isDirectory) {
          if (flags.write || openFlags.truncate) return err("is-directory");
          return ok(new Descriptor(target, wantsWrite));
        }
        if (openFlags.directory) return info ? err("not-directory") : err("no-entry");
        if (!info || openFlags.truncate) {
          Deno.writeFileSync(target, new Uint8Array(), { create: true });
        }
        return ok(new Descriptor(target, wantsWrite));
      } catch (error) {
        return err(errorCode(error));
      }
    }

    readViaStream(offset: bigint): WasiResult<InputStream> {
      let at = Number(offset);
      return attempt(() => {
        const file = Deno.openSync(this.#path, { read: true });
        return new InputStream(
          (length) => {
            file.seekSync(at, Deno.SeekMode.Start);
            const buffer = new Uint8Array(Math.min(length, 1_048_576));
            const read = file.readSync(buffer);
            if (read === null) {
              file.close();
              return undefined;
            }
            at += read;
            return buffer.subarray(0, read);
          },
          undefined,
          () => closeQuietly(file),
        );
      });
    }

    writeViaStream(offset: bigint): WasiResult<OutputStream> {
      if (!this.#write) return err("read-only");
      let at = Number(offset);
      return attempt(() => {
        const file = Deno.openSync(this.#path, { write: true });
        return new OutputStream(
          (bytes) => {
            file.seekSync(at, Deno.SeekMode.Start);
            for (let done = 0; done < bytes.byteLength;) done += file.writeSync(bytes.subarray(done));
            at += bytes.byteLength;
          },
          undefined,
          () => closeQuietly(file),
        );
      });
    }

    appendViaStream(): WasiResult<OutputStream> {
      if (!this.#write) return err("read-only");
      return attempt(() => {
        const file = Deno.openSync(this.#path, { append: true });
        return new OutputStream(
          (bytes) => {
            for (let done = 0; done < bytes.byteLength;) done += file.writeSync(bytes.subarray(done));
          },
          undefined,
          () => closeQuietly(file),
        );
      });
    }

    read(length: bigint, offset: bigint): WasiResult<[Uint8Array, boolean]> {
      return attempt(() => {
        using file = Deno.openSync(this.#path, { read: true });
        file.seekSync(Number(offset), Deno.SeekMode.Start);
        const buffer = new Uint8Array(Math.min(Number(length), 16 * 1_048_576));
        const read = file.readSync(buffer) ?? 0;
        return [buffer.subarray(0, read), read === 0 && buffer.byteLength > 0];
      });
    }

    write(buffer: Uint8Array, offset: bigint): WasiResult<bigint> {
      if (!this.#write) return err("read-only");
      return attempt(() => {
        using file = Deno.openSync(this.#path, { write: true });
        file.seekSync(Number(offset), Deno.SeekMode.Start);
        for (let done = 0; done < buffer.byteLength;) done += file.writeSync(buffer.subarray(done));
        return BigInt(buffer.byteLength);
      });
    }

    setSize(size: bigint): WasiResult<void> {
      if (!this.#write) return err("read-only");
      return attempt(() => Deno.truncateSync(this.#path, Number(size)));
    }

    sync(): WasiResult<void> {
      return ok(undefined);
    }

    syncData(): WasiResult<void> {
      return ok(undefined);
    }

    advise(): WasiResult<void> {
      return ok(undefined);
    }

    getFlags(): WasiResult<DescriptorFlags> {
      return ok({ read: true, write: this.#write, mutateDirectory: this.#write });
    }

    readDirectory(): WasiResult<DirectoryEntryStream> {
      return attempt(() =>
        new DirectoryEntryStream(
          [...Deno.readDirSync(this.#path)]
            .map((entry) => ({ type: typeOf(entry), name: entry.name }))
            .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
        )
      );
    }

    getType(): WasiResult<DescriptorType> {
      return attempt(() => typeOf(Deno.statSync(this.#path)));
    }

    stat(): WasiResult<object> {
      return attempt(() => statOf(Deno.statSync(this.#path)));
    }

    statAt(pathFlags: PathFlags, path: string): WasiResult<object> {
      const resolved = this.#resolve(path, pathFlags.symlinkFollow === true, true);
      if (resolved.tag === "err") return resolved;
      return attempt(() => statOf(Deno.lstatSync(resolved.val)));
    }

    metadataHash(): WasiResult<{ lower: bigint; upper: bigint }> {
      return attempt(() => hashOf(Deno.statSync(this.#path)));
    }

    metadataHashAt(pathFlags: PathFlags, path: string): WasiResult<{ lower: bigint; upper: bigint }> {
      const resolved = this.#resolve(path, pathFlags.symlinkFollow === true, true);
      if (resolved.tag === "err") return resolved;
      return attempt(() => hashOf(Deno.lstatSync(resolved.val)));
    }

    isSameObject(other: Descriptor): boolean {
      return other.#path === this.#path;
    }

    createDirectoryAt(path: string): WasiResult<void> {
      if (!this.#write) return err("read-only");
      const resolved = this.#resolveNew(path, false);
      if (resolved.tag === "err") return resolved;
      return attempt(() => Deno.mkdirSync(resolved.val));
    }

    removeDirectoryAt(path: string): WasiResult<void> {
      if (!this.#write) return err("read-only");
      const resolved = this.#resolve(path, false, true);
      if (resolved.tag === "err") return resolved;
      if (resolved.val === root) return err("not-permitted");
      return attempt(() => {
        if (!Deno.lstatSync(resolved.val).isDirectory) throw new Deno.errors.NotADirectory();
        Deno.removeSync(resolved.val);
      });
    }

    unlinkFileAt(path: string): WasiResult<void> {
      if (!this.#write) return err("read-only");
      const resolved = this.#resolve(path, false, true);
      if (resolved.tag === "err") return resolved;
      return attempt(() => {
        if (Deno.lstatSync(resolved.val).isDirectory) throw new Deno.errors.IsADirectory();
        Deno.removeSync(resolved.val);
      });
    }

    renameAt(oldPath: string, newDescriptor: Descriptor, newPath: string): WasiResult<void> {
      if (!this.#write) return err("read-only");
      const from = this.#resolve(oldPath, false, true);
      if (from.tag === "err") return from;
      if (from.val === root) return err("not-permitted");
      const to = newDescriptor.#resolveNew(newPath, false);
      if (to.tag === "err") return to;
      return attempt(() => Deno.renameSync(from.val, to.val));
    }

    readlinkAt(path: string): WasiResult<string> {
      const resolved = this.#resolve(path, false, true);
      if (resolved.tag === "err") return resolved;
      return attempt(() => Deno.readLinkSync(resolved.val));
    }

    symlinkAt(): WasiResult<void> {
      return err(writable ? "not-permitted" : "read-only");
    }

    linkAt(): WasiResult<void> {
      return err(writable ? "not-permitted" : "read-only");
    }

    /** The lexical path of `path` below this descriptor, or `not-permitted` when it leaves the workspace. */
    #lexical(path: string): WasiResult<string> {
      if (path.startsWith("/")) return err("not-permitted");
      const parts = this.#path.split("/");
      for (const part of path.split("/")) {
        if (part === "" || part === ".") continue;
        if (part === "..") parts.pop();
        else parts.push(part);
      }
      const lexical = parts.join("/") || "/";
      return inside(lexical) ? ok(lexical) : err("not-permitted");
    }

    /**
     * The real path of an existing `path`. Without `followFinal` a final symlink
     * is refused (as O_NOFOLLOW does), or kept as the link itself with `keepLink`.
     */
    #resolve(path: string, followFinal: boolean, keepLink = false): WasiResult<string> {
      const lexical = this.#lexical(path);
      if (lexical.tag === "err") return lexical;
      try {
        if (!followFinal && Deno.lstatSync(lexical.val).isSymlink) {
          if (!keepLink) return err("loop");
          const parent = this.#realInside(lexical.val.slice(0, lexical.val.lastIndexOf("/")) || "/");
          return parent.tag === "err"
            ? parent
            : ok(`${parent.val}/${lexical.val.slice(lexical.val.lastIndexOf("/") + 1)}`);
        }
        return this.#realInside(lexical.val);
      } catch (error) {
        return err(errorCode(error));
      }
    }

    /** Where a new entry at `path` goes: its parent resolved inside the workspace, or the existing entry. */
    #resolveNew(path: string, followFinal: boolean): WasiResult<string> {
      const lexical = this.#lexical(path);
      if (lexical.tag === "err") return lexical;
      try {
        Deno.lstatSync(lexical.val);
        return this.#resolve(path, followFinal);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) return err(errorCode(error));
      }
      const cut = lexical.val.lastIndexOf("/");
      const parent = this.#realInside(lexical.val.slice(0, cut) || "/");
      return parent.tag === "err" ? parent : ok(`${parent.val}/${lexical.val.slice(cut + 1)}`);
    }

    #realInside(path: string): WasiResult<string> {
      try {
        const real = Deno.realPathSync(path);
        return inside(real) ? ok(real) : err("not-permitted");
      } catch (error) {
        return err(errorCode(error));
      }
    }
  }

  return {
    types: { Descriptor, DirectoryEntryStream, filesystemErrorCode: () => undefined },
    preopens: { getDirectories: () => (root === undefined ? [] : [[new Descriptor(root, writable), "/"]]) },
  };
}

function hashOf(info: Deno.FileInfo): { lower: bigint; upper: bigint } {
  return { lower: BigInt(info.ino ?? 0), upper: BigInt(info.dev ?? 0) };
}
