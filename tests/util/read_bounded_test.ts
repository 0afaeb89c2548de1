import assert from "node:assert/strict";
import {} from "../../src/outcome/errors.ts";
import { readBounded } from "../../src/util/read_bounded.ts";
import { lines } from "../../src/util/lines.ts";
import { hasCode } from "../_support/has_code.ts";

/** A stream of `chunks` chunks of `size` bytes each; `pulled` counts what was read. */
function stream(chunks: number, size: number, pulled = { bytes: 0 }): ReadableStream<Uint8Array> {
  let left = chunks;
  return new ReadableStream({
    pull(controller) {
      if (left-- <= 0) return controller.close();
      pulled.bytes += size;
      controller.enqueue(new Uint8Array(size).fill(97));
    },
  });
}

Deno.test("readBounded reads a body up to its limit and stops reading past it", async () => {
  assert.equal(await readBounded(stream(4, 256), "a body", 1024), "a".repeat(1024));
  assert.equal(await readBounded(null, "a body", 1), "");
  const pulled = { bytes: 0 };
  await assert.rejects(
    readBounded(stream(1_000_000, 1024, pulled), "a body", 4096),
    hasCode("payload_too_large"),
  );
  assert.ok(pulled.bytes < 64 * 1024, `stopped early (${pulled.bytes} bytes pulled)`);
});

Deno.test("lines splits on newlines across chunks, multi-byte text included, and bounds a line", async () => {
  const text = "héllo\nwörld\n\nlast";
  const bytes = new TextEncoder().encode(text);
  const chunked = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const byte of bytes) controller.enqueue(new Uint8Array([byte]));
      controller.close();
    },
  });
  const seen: string[] = [];
  for await (const line of lines(chunked)) seen.push(line);
  assert.deepEqual(seen, ["héllo", "wörld", "", "last"]);
  const long = async () => {
    for await (const _ of lines(stream(100, 1024), 4096)) { /* reading */ }
  };
  await assert.rejects(long(), hasCode("payload_too_large"));
});
