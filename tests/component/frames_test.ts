import assert from "node:assert/strict";
import { encodeFrame, type Frame, FrameReader } from "../../src/component/frames.ts";
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

async function readAll(reader: FrameReader): Promise<Frame[]> {
  const frames = [];
  for (let frame = await reader.next(); frame !== undefined; frame = await reader.next()) frames.push(frame);
  return frames;
}

const big = { text: "é🙂x".repeat(20_000) };
const json = JSON.stringify({ quoted: '"a" \\ b', big: big.text });
const messages: Frame[] = [
  { message: { n: 1 }, texts: [] },
  { message: "two", texts: [json, undefined, ""] },
  { message: big, texts: [] },
  { message: { n: 4, nested: [1, 2, 3] }, texts: [undefined] },
  { message: big, texts: [json, big.text] },
  { message: null, texts: ["é🙂"] },
  { message: { n: 7 }, texts: [] },
];
const encode = ({ message, texts }: Frame) => encodeFrame(message, texts);

Deno.test("FrameReader gives each frame whole, texts as sent, however the bytes are cut, across frames larger than its buffer", async () => {
  const bytes = concat(messages.map(encode));
  for (const sizes of [[3, 5, 7], [65_536], [bytes.byteLength], [2, 70_000, 1], [1, 300_000]]) {
    assert.deepEqual(await readAll(new FrameReader(chunked(bytes, sizes))), messages, `chunks of ${sizes}`);
  }
});

Deno.test("FrameReader ends with undefined when the stream ends inside a frame", async () => {
  const whole = encodeFrame({ n: 1 });
  const torn = encodeFrame({ n: 2, pad: "x".repeat(100) }).subarray(0, 20);
  const reader = new FrameReader(chunked(concat([whole, torn]), [7]));
  assert.deepEqual(await reader.next(), { message: { n: 1 }, texts: [] });
  assert.deepEqual(await reader.next(), undefined);
});

Deno.test("FrameReader refuses a frame whose message or text lengths overrun it", async () => {
  const message = encodeFrame({ n: 1 });
  new DataView(message.buffer).setUint32(4, 1_000, true);
  const text = encodeFrame({ n: 1 }, ["abc"]);
  new DataView(text.buffer).setUint32(text.byteLength - 7, 4, true);
  const stub = concat([encodeFrame({ n: 1 }), new Uint8Array(2)]);
  new DataView(stub.buffer).setUint32(0, stub.byteLength - 4, true);
  for (const torn of [message, text, stub]) {
    await assert.rejects(new FrameReader(chunked(torn, [5])).next(), /overruns the frame/);
  }
});

Deno.test("SyncFrames in a child reads and writes frames of every size, many per pipe write, in order", async () => {
  await using child = spawnDeno(["run", "--quiet", new URL("./fixtures/frame_echo.ts", import.meta.url).href], {
    stdin: "piped",
    stdout: "piped",
  });
  const writer = child.stdin.getWriter();
  const reader = new FrameReader(child.stdout);
  const sent = [...messages, ...Array.from({ length: 500 }, (_, n) => ({ message: { n }, texts: [String(n)] }))];
  // Not awaited before reading: the child's echo fills its stdout pipe long before this write completes.
  const written = writer.write(concat(sent.map(encode)));
  const received = [];
  for (let i = 0; i < sent.length; i++) received.push(await reader.next());
  await written;
  assert.deepEqual(received, sent);
  await writer.close();
  assert.deepEqual(await reader.next(), undefined);
  assert.deepEqual((await child.status).code, 0);
});
