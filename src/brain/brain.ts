import { RemoteBackend, type RemoteBrainOptions } from "../host/remote_brain.ts";
import type { PlacedTool } from "../tool/tool.ts";
import type { BrainBackend, CreateSessionOptions, Sessions } from "./backend.ts";
import { type BrainOptions, EmbeddedBackend } from "./embedded.ts";

export type { BrainSession, CreateSessionOptions, Sessions } from "./backend.ts";
export type { BrainOptions } from "./embedded.ts";
export type { RemoteBrainOptions } from "../host/remote_brain.ts";

/**
 * A Brain: sessions, their journal and their Tool calls. `new Brain()` runs them
 * in this process; `new Brain({ url, token })` is a client of a Brain server
 * (`deno task serve`) that hosts this application's Tools over one WebSocket.
 * Both have the same API.
 *
 * @example
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const add = tool({
 *   name: "add",
 *   description: "Add two numbers.",
 *   input: z.object({ a: z.number(), b: z.number() }),
 *   run: ({ a, b }, ctx) => ctx.finish(a + b),
 * });
 * const brain = new Brain();
 * try {
 *   const session = await brain.sessions.create({ tools: [add()] });
 *   const end = await session.call("add", { a: 1, b: 2 });
 *   console.log(end.outcome); // { status: "ok", value: 3 }
 * } finally {
 *   await brain.close();
 * }
 * ```
 */
export class Brain {
  /** Creates, opens and deletes sessions. */
  readonly sessions: Sessions;
  #backend: BrainBackend;

  /** An embedded Brain over `options.journal` (in memory by default), or a client of the server at `options.url`. */
  constructor(options: BrainOptions | RemoteBrainOptions = {}) {
    const backend = this.#backend = "url" in options ? new RemoteBackend(options) : new EmbeddedBackend(options);
    this.sessions = Object.freeze({
      create: (create: CreateSessionOptions = {}) => backend.create(create),
      get: (id: string, get?: { tools?: readonly PlacedTool[] }) => backend.get(id, get?.tools ?? []),
      delete: (id: string) => backend.delete(id),
      list: () => backend.list(),
    });
  }

  /** Opens a Brain; the same as the constructor, as a promise for durable journals that open asynchronously. */
  static open(options: BrainOptions | RemoteBrainOptions = {}): Promise<Brain> {
    return Promise.resolve(new Brain(options));
  }

  /** Ends every open session handle, then closes the journal or the host connection. */
  close(): Promise<void> {
    return this.#backend.close();
  }
}
