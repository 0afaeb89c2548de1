import assert from "node:assert/strict";
import { encodeFrame, FrameReader } from "../../src/component/frames.ts";
import { spawnDeno } from "../_support/spawn_deno.ts";

/** A byte stream handing out `bytes` in chunks of the given sizes, then the rest, then its end. */
function chunked(bytes: Uint8Array, sizes: number[]): ReadableStream<Uint8Array> {
  let at = 0;
  let turn = 0;
  return new ReadableStream({
    type: "bytes",
    pull(controller) {
      if (at >= bytes.byteLength) {
        controller.close();
        return controller.byobRequest?.respond(0);
      }
      const size = sizes[turn++ % sizes.length];
      controller.enqueue(bytes.slice(at, at + size));
      at += size;
    },
  });
}

function concat(parts: Uint8Array[]): Uint8Array {
  const joined = new Uint8Array(parts.reduce((sum, part) => sum + part.byteLength, 0));
  let at = 0;
  for (const part of parts) joined.set(part, (at += part.byteLength) - part.byteLength);
  return joined;
}

async function readAll(reader: FrameReader): Promise<unknown[]> {
  const values = [];
  for (let value = await reader.next(); value !== undefined; value = await reader.next()) values.push(value);
  return values;
}

const big = { text: "é🙂x".repeat(20_000) };
const messages = [{ n: 1 }, "two", big, { n: 4, nested: [1, 2, 3] }, big, null, { n: 7 }];

Deno.test("FrameReader gives each frame whole however the bytes are cut, across frames larger than its buffer", async () => {
  const bytes = concat(messages.map(encodeFrame));
  for (const sizes of [[3, 5, 7], [65_536], [bytes.byteLength], [2, 70_000, 1], [1, 300_000]]) {
    assert.deepEqual(await readAll(new FrameReader(chunked(bytes, sizes))), messages, `chunks of ${sizes}`);
  }
});

Deno.test("FrameReader ends with undefined when the stream ends inside a frame", async () => {
  const whole = encodeFrame({ n: 1 });
  const torn = encodeFrame({ n: 2, pad: "x".repeat(100) }).subarray(0, 20);
  const reader = new FrameReader(chunked(concat([whole, torn]), [7]));
  assert.deepEqual(await reader.next(), { n: 1 });
  assert.deepEqual(await reader.next(), undefined);
});

Deno.test("SyncFrames in a child reads and writes frames of every size, many per pipe write, in order", async () => {
  await using child = spawnDeno(["run", "--quiet", new URL("./fixtures/frame_echo.ts", import.meta.url).href], {
    stdin: "piped",
    stdout: "piped",
  });
  const writer = child.stdin.getWriter();
  const reader = new FrameReader(child.stdout);
  const sent = [...messages, ...Array.from({ length: 500 }, (_, n) => ({ n }))];
  // Not awaited before reading: the child's echo fills its stdout pipe long before this write completes.
  const written = writer.write(concat(sent.map(encodeFrame)));
  const received = [];
  for (let i = 0; i < sent.length; i++) received.push(await reader.next());
  await written;
  assert.deepEqual(received, sent);
  await writer.close();
  assert.deepEqual(await reader.next(), undefined);
  assert.deepEqual((await child.status).code, 0);
});
