/**
 * The transport floor for the component bench: a child that answers every
 * frame with `{ tag: "ok", val: 1 }` over the same frames a sandbox uses, with
 * no Component, glue or journal behind it.
 *
 * @module
 */
import { SyncFrames } from "../src/component/frames.ts";

const frames = new SyncFrames();
while (frames.read() !== undefined) frames.write({ type: "reply", reply: { tag: "ok", val: 1 } });
