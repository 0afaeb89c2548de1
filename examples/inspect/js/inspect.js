// The inspect Tool in JavaScript, against `brain:inspect/inspect` (examples/inspect/wit), built into a
// Component with componentize-qjs (QuickJS, `deno task build:inspect-js`) or componentize-js (SpiderMonkey).
// It emits `inspect_started`, lists `path` inside the preopened workspace to `depth` levels
// and finishes with the entries; a path the workspace refuses finishes with `fs_error`.
import * as host from "brain:tool/host@0.2.0";
import * as preopens from "wasi:filesystem/preopens@0.2.12";

// wasi:filesystem/types error-code, in WIT order: details.errno is the index.
const ERROR_CODES = [
  "access",
  "would-block",
  "already",
  "bad-descriptor",
  "busy",
  "deadlock",
  "quota",
  "exist",
  "file-too-large",
  "illegal-byte-sequence",
  "in-progress",
  "interrupted",
  "invalid",
  "io",
  "is-directory",
  "loop",
  "too-many-links",
  "message-size",
  "name-too-long",
  "no-device",
  "no-entry",
  "no-lock",
  "insufficient-memory",
  "insufficient-space",
  "not-directory",
  "not-empty",
  "not-recoverable",
  "unsupported",
  "no-tty",
  "no-such-device",
  "overflow",
  "not-permitted",
  "pipe",
  "read-only",
  "invalid-seek",
  "text-file-busy",
  "cross-device",
];

function walk(directory, prefix, depth, out) {
  const stream = directory.readDirectory();
  for (let entry = stream.readDirectoryEntry(); entry; entry = stream.readDirectoryEntry()) {
    const isDirectory = entry.type === "directory";
    const name = prefix + entry.name;
    out.push(isDirectory ? `${name}/` : name);
    if (isDirectory && depth > 1) {
      const child = directory.openAt({}, entry.name, { directory: true }, { read: true });
      walk(child, `${name}/`, depth - 1, out);
    }
  }
}

export const tool = {
  run(invocation) {
    const { path } = JSON.parse(invocation.input);
    const { depth } = JSON.parse(invocation.options);
    // A u64 is a number in QuickJS and a BigInt in SpiderMonkey.
    const eventSequence = Number(host.emit("inspect_started", invocation.input));
    let outcome;
    try {
      const [[root]] = preopens.getDirectories();
      const directory = root.openAt({ symlinkFollow: true }, path, { directory: true }, { read: true });
      const entries = [];
      walk(directory, "", depth, entries);
      outcome = { status: "ok", value: { eventSequence, entries } };
    } catch (error) {
      // An import's err(error-code) arrives as an Error whose message is the code's name.
      const code = typeof error === "string" ? error : error?.message;
      outcome = {
        status: "error",
        error: {
          code: "fs_error",
          message: "the workspace refused the path",
          details: { errno: ERROR_CODES.indexOf(code) },
        },
      };
    }
    host.finish(JSON.stringify(outcome), null);
  },
};
