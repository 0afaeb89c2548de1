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
import { InputStream, OutputStream, wasiError } from "./streams.ts";

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
type PathFlags = { symlinkFollow?: boolean };
type OpenFlags = { create?: boolean; directory?: boolean; exclusive?: boolean; truncate?: boolean };
type DescriptorFlags = { read?: boolean; write?: boolean; mutateDirectory?: boolean };

/** Returns `err(code)` to the guest. */
function fail(code: ErrorCode): never {
  throw wasiError(code);
}

function errorCode(error: unknown): ErrorCode {
  if (typeof error === "object" && error !== null && "payload" in error) return error.payload as ErrorCode;
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
function attempt<T>(action: () => T): T {
  try {
    return action();
  } catch (error) {
    return fail(errorCode(error));
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
    readDirectoryEntry(): { type: DescriptorType; name: string } | undefined {
      return this.#entries.shift();
    }
  }

  class Descriptor {
    #path: string;
    #write: boolean;
    constructor(path: string, write: boolean) {
      this.#path = path;
      this.#write = write;
    }

    openAt(pathFlags: PathFlags, path: string, openFlags: OpenFlags, flags: DescriptorFlags): Descriptor {
      const wantsWrite = Boolean(openFlags.create || openFlags.truncate || flags.write || flags.mutateDirectory);
      if (wantsWrite && !writable) return fail("read-only");
      const target = openFlags.create
        ? this.#resolveNew(path, pathFlags.symlinkFollow === true)
        : this.#resolve(path, pathFlags.symlinkFollow === true);
      try {
        let info: Deno.FileInfo | undefined;
        try {
          info = Deno.statSync(target);
        } catch (error) {
          if (!(error instanceof Deno.errors.NotFound) || !openFlags.create) throw error;
        }
        if (info && openFlags.create && openFlags.exclusive) return fail("exist");
        if (info?.isDirectory) {
          if (flags.write || openFlags.truncate) return fail("is-directory");
          return new Descriptor(target, wantsWrite);
        }
        if (openFlags.directory) return fail(info ? "not-directory" : "no-entry");
        if (!info || openFlags.truncate) {
          Deno.writeFileSync(target, new Uint8Array(), { create: true });
        }
        return new Descriptor(target, wantsWrite);
      } catch (error) {
        return fail(errorCode(error));
      }
    }

    readViaStream(offset: bigint): InputStream {
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

    writeViaStream(offset: bigint): OutputStream {
      if (!this.#write) return fail("read-only");
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

    appendViaStream(): OutputStream {
      if (!this.#write) return fail("read-only");
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

    read(length: bigint, offset: bigint): [Uint8Array, boolean] {
      return attempt(() => {
        using file = Deno.openSync(this.#path, { read: true });
        file.seekSync(Number(offset), Deno.SeekMode.Start);
        const buffer = new Uint8Array(Math.min(Number(length), 16 * 1_048_576));
        const read = file.readSync(buffer) ?? 0;
        return [buffer.subarray(0, read), read === 0 && buffer.byteLength > 0];
      });
    }

    write(buffer: Uint8Array, offset: bigint): bigint {
      if (!this.#write) return fail("read-only");
      return attempt(() => {
        using file = Deno.openSync(this.#path, { write: true });
        file.seekSync(Number(offset), Deno.SeekMode.Start);
        for (let done = 0; done < buffer.byteLength;) done += file.writeSync(buffer.subarray(done));
        return BigInt(buffer.byteLength);
      });
    }

    setSize(size: bigint): void {
      if (!this.#write) return fail("read-only");
      return attempt(() => Deno.truncateSync(this.#path, Number(size)));
    }

    sync(): void {}

    syncData(): void {}

    advise(): void {}

    getFlags(): DescriptorFlags {
      return { read: true, write: this.#write, mutateDirectory: this.#write };
    }

    readDirectory(): DirectoryEntryStream {
      return attempt(() =>
        new DirectoryEntryStream(
          [...Deno.readDirSync(this.#path)]
            .map((entry) => ({ type: typeOf(entry), name: entry.name }))
            .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
        )
      );
    }

    getType(): DescriptorType {
      return attempt(() => typeOf(Deno.statSync(this.#path)));
    }

    stat(): object {
      return attempt(() => statOf(Deno.statSync(this.#path)));
    }

    statAt(pathFlags: PathFlags, path: string): object {
      const resolved = this.#resolve(path, pathFlags.symlinkFollow === true, true);
      return attempt(() => statOf(Deno.lstatSync(resolved)));
    }

    metadataHash(): { lower: bigint; upper: bigint } {
      return attempt(() => hashOf(Deno.statSync(this.#path)));
    }

    metadataHashAt(pathFlags: PathFlags, path: string): { lower: bigint; upper: bigint } {
      const resolved = this.#resolve(path, pathFlags.symlinkFollow === true, true);
      return attempt(() => hashOf(Deno.lstatSync(resolved)));
    }

    isSameObject(other: Descriptor): boolean {
      return other.#path === this.#path;
    }

    createDirectoryAt(path: string): void {
      if (!this.#write) return fail("read-only");
      const resolved = this.#resolveNew(path, false);
      return attempt(() => Deno.mkdirSync(resolved));
    }

    removeDirectoryAt(path: string): void {
      if (!this.#write) return fail("read-only");
      const resolved = this.#resolve(path, false, true);
      if (resolved === root) return fail("not-permitted");
      return attempt(() => {
        if (!Deno.lstatSync(resolved).isDirectory) throw new Deno.errors.NotADirectory();
        Deno.removeSync(resolved);
      });
    }

    unlinkFileAt(path: string): void {
      if (!this.#write) return fail("read-only");
      const resolved = this.#resolve(path, false, true);
      return attempt(() => {
        if (Deno.lstatSync(resolved).isDirectory) throw new Deno.errors.IsADirectory();
        Deno.removeSync(resolved);
      });
    }

    renameAt(oldPath: string, newDescriptor: Descriptor, newPath: string): void {
      if (!this.#write) return fail("read-only");
      const from = this.#resolve(oldPath, false, true);
      if (from === root) return fail("not-permitted");
      const to = newDescriptor.#resolveNew(newPath, false);
      return attempt(() => Deno.renameSync(from, to));
    }

    readlinkAt(path: string): string {
      const resolved = this.#resolve(path, false, true);
      return attempt(() => Deno.readLinkSync(resolved));
    }

    symlinkAt(): void {
      return fail(writable ? "not-permitted" : "read-only");
    }

    linkAt(): void {
      return fail(writable ? "not-permitted" : "read-only");
    }

    /** The lexical path of `path` below this descriptor, or `not-permitted` when it leaves the workspace. */
    #lexical(path: string): string {
      if (path.startsWith("/")) return fail("not-permitted");
      const parts = this.#path.split("/");
      for (const part of path.split("/")) {
        if (part === "" || part === ".") continue;
        if (part === "..") parts.pop();
        else parts.push(part);
      }
      const lexical = parts.join("/") || "/";
      return inside(lexical) ? lexical : fail("not-permitted");
    }

    /**
     * The real path of an existing `path`. Without `followFinal` a final symlink
     * is refused (as O_NOFOLLOW does), or kept as the link itself with `keepLink`.
     */
    #resolve(path: string, followFinal: boolean, keepLink = false): string {
      const lexical = this.#lexical(path);
      try {
        if (!followFinal && Deno.lstatSync(lexical).isSymlink) {
          if (!keepLink) return fail("loop");
          const parent = this.#realInside(lexical.slice(0, lexical.lastIndexOf("/")) || "/");
          return `${parent}/${lexical.slice(lexical.lastIndexOf("/") + 1)}`;
        }
        return this.#realInside(lexical);
      } catch (error) {
        return fail(errorCode(error));
      }
    }

    /** Where a new entry at `path` goes: its parent resolved inside the workspace, or the existing entry. */
    #resolveNew(path: string, followFinal: boolean): string {
      const lexical = this.#lexical(path);
      try {
        Deno.lstatSync(lexical);
        return this.#resolve(path, followFinal);
      } catch (error) {
        if (!(error instanceof Deno.errors.NotFound)) fail(errorCode(error));
      }
      const cut = lexical.lastIndexOf("/");
      const parent = this.#realInside(lexical.slice(0, cut) || "/");
      return `${parent}/${lexical.slice(cut + 1)}`;
    }

    #realInside(path: string): string {
      try {
        const real = Deno.realPathSync(path);
        return inside(real) ? real : fail("not-permitted");
      } catch (error) {
        return fail(errorCode(error));
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
