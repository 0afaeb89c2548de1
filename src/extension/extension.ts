import { RecentKeys } from "../util/recent_keys.ts";
import { errorFromWire } from "../outcome/wire_error.ts";
import { checkToken } from "../util/tokens.ts";
import { MAX_BODY_BYTES, readBounded } from "../util/read_bounded.ts";
import { allKeys, isList, readOptions } from "../outcome/known_keys.ts";
import type { ModelResult } from "../model/types.ts";
import type { JournalRecord } from "../journal/records.ts";
import { Hono } from "hono";
import { BrainError, type BrainErrorCode } from "../outcome/errors.ts";
import { canonicalJson, findNonJson, type JsonValue } from "../outcome/json.ts";
import { Finished } from "../contract/context.ts";
import { type CallSink, endedReason, type Invocation, type PublishedResult } from "../contract/call.ts";
import { runHostTool } from "../run/host_tool.ts";
import { sameText } from "../util/same_text.ts";
import { callAt } from "../util/timer.ts";
import { checkPlacedTools } from "../tool/placed_tools.ts";
import type { PlacedTool } from "../contract/placement.ts";
import type { ExtensionAck, ExtensionEnded, ExtensionReport } from "./protocol.ts";
import { shownValue } from "../util/shown_value.ts";
import { checkSessionId } from "../util/names.ts";
import { jsonOptions } from "../outcome/json_options.ts";
import { optionsNotJson } from "./protocol.ts";

/** Options of {@linkcode toolExtension}. */
export interface ToolExtensionOptions {
  /** The placed host Tools it serves, with their configured options. */
  tools: readonly PlacedTool[];
  /**
   * Longest a call's request may stay open, in ms; 30 s by default. The call's own deadline may end it sooner.
   * A request body (a call's or an acknowledgment's) that has not ended by then is refused 408 `timeout`.
   */
  lifetimeMs?: number;
  /** When set, every request must carry `authorization: Bearer <token>`. */
  token?: string;
  /** Bytes of one request body it reads (8 MiB by default); a larger one gets 413 `payload_too_large`. */
  maxRequestBytes?: number;
}

/** The extension as a web handler: serve it (`Deno.serve(ext.fetch)`) or mount it in a hono app (`app.mount`). */
export interface ToolExtension {
  /** Answers one request. */
  fetch(request: Request): Response | Promise<Response>;
}

const encoder = new TextEncoder();
/** The HTTP status of a refused request's code, where it is not 400. */
const REFUSAL_STATUS: Partial<Record<BrainErrorCode, 408 | 413>> = { payload_too_large: 413, timeout: 408 };
/** How many calls that ran here are remembered, so a replay of one is refused rather than run again. */
const RAN_KEPT = 4_096;
const ENDED_CAUSES: readonly unknown[] = ["timeout", "cancelled", "unknown"];

/**
 * The Application tool extension: a hono app serving the same `tool()`
 * declarations in a bounded HTTP request. `POST /calls` takes
 * `{ sessionId, sequence, tool, input, options, deadline }` and streams the Tool's reports
 * as NDJSON; `POST /calls/acks` is where Brain acknowledges each report after its
 * journal committed it, so `ctx.emitResult` and `ctx.finish` resolve with committed
 * sequences and a finish is done only once it is durable. Input and output are
 * validated as in the host. A Tool runs with the options it was configured with
 * here; a call whose placement names other options is refused `invalid_options`. It grants no `ctx.emit` events, no Environment control
 * (and no model calls), and nothing past the request: once it ends, by finish,
 * lifetime or disconnect, later reports reject with `lifetime_exceeded` (except a
 * second `ctx.finish` after a committed one, which resolves late with the first, as
 * in the host; `ctx.emit` and `ctx.emitResult` after a finish reject `call_finished`). A report
 * whose ack never arrives rejects the same way when the request ends: Brain may
 * still have committed it, so treat that rejection as an unknown outcome.
 *
 * @example
 * ```ts
 * import { tool } from "@aexhq/brain";
 * import { toolExtension } from "@aexhq/brain/extension";
 * import { z } from "zod";
 *
 * const lookup = tool({
 *   name: "lookup",
 *   description: "Look up one record.",
 *   input: z.object({ id: z.string() }),
 *   options: z.object({ prefix: z.string() }),
 *   run: ({ id }, ctx) => ctx.finish({ key: `${ctx.options.prefix}${id}` }),
 * });
 * const app = toolExtension({ tools: [lookup({ prefix: "customer:" })], lifetimeMs: 10_000 });
 * // Deno.serve(app.fetch), or mount it: honoApp.mount("/brain", app.fetch)
 * console.log(typeof app.fetch); // "function"
 * ```
 */
export function toolExtension(options: ToolExtensionOptions): ToolExtension {
  const { tools, lifetimeMs = 30_000, token, maxRequestBytes = MAX_BODY_BYTES } = readOptions(
    "toolExtension options",
    options,
    allKeys<ToolExtensionOptions>({ tools: true, lifetimeMs: true, token: true, maxRequestBytes: true }),
  );
  if (!Number.isSafeInteger(maxRequestBytes) || maxRequestBytes <= 0) {
    throw new BrainError(
      "invalid_argument",
      `maxRequestBytes must be a positive integer, got ${shownValue(maxRequestBytes)}`,
    );
  }
  if (!isList(tools)) {
    throw new BrainError("invalid_argument", "toolExtension needs tools: a list of placed Tools");
  }
  const listed = checkPlacedTools(tools);
  if (token !== undefined) checkToken("toolExtension's token", token);
  if (!Number.isFinite(lifetimeMs) || lifetimeMs <= 0) {
    throw new BrainError("invalid_argument", `lifetimeMs must be a positive number, got ${shownValue(lifetimeMs)}`);
  }
  const placed = new Map<string, ServedTool>();
  for (const entry of listed) {
    if (!entry.tool.run || entry.implementation) {
      throw new BrainError("invalid_tool", `tool ${entry.tool.name}: the extension serves only run functions`);
    }
    if (placed.has(entry.tool.name)) throw new BrainError("duplicate_tool", `tool ${entry.tool.name} is served twice`);
    placed.set(entry.tool.name, { ...entry, configured: configuredOptions(entry) });
  }
  const live = new Map<string, RequestCall>();
  const ran = new RecentKeys(RAN_KEPT);
  const app = new Hono();

  app.onError((error, c) =>
    error instanceof BrainError
      ? c.json(problem(error.code, error.message), REFUSAL_STATUS[error.code] ?? 400)
      : c.json(problem("protocol_error", error.message), 500)
  );
  app.notFound((c) =>
    c.json(problem("invalid_argument", `no route ${c.req.method} ${new URL(c.req.url).pathname.slice(0, 256)}`), 404)
  );
  app.use("*", async (c, next) => {
    if (token !== undefined && !sameText(c.req.header("authorization") ?? "", `Bearer ${token}`)) {
      return c.json(problem("unauthorized", "missing or wrong bearer token"), 401);
    }
    await next();
  });

  app.post("/calls", async (c) => {
    const call = parseCall(await boundedJson(c.req.raw, maxRequestBytes, lifetimeMs));
    if (!call) {
      return c.json(
        problem("invalid_argument", "expected { sessionId, sequence, tool, input, options, deadline? }"),
        400,
      );
    }
    const { invocation } = call;
    const target = placed.get(invocation.tool);
    if (!target) return c.json(problem("unknown_tool", `tool ${invocation.tool} is not served here`), 404);
    // The options the handler sees are the ones configured here; a placement naming others is refused, never ignored.
    if (canonicalJson(call.options) !== target.configured) {
      return c.json(problem("invalid_options", differentOptions(invocation.tool)), 400);
    }
    const key = callKey(invocation.sessionId, invocation.sequence);
    if (live.has(key)) return c.json(problem("protocol_error", `call ${key} is already running`), 409);
    // Brain sends a call once: the same call again is a replay, never run twice.
    if (ran.has(key)) return c.json(problem("call_finished", `call ${key} already ran here`), 409);
    const lifetimeEnd = Date.now() + lifetimeMs;
    const byDeadline = invocation.deadline !== undefined && invocation.deadline <= lifetimeEnd;
    const running = new RequestCall(byDeadline, () => live.delete(key));
    live.set(key, running);
    ran.add(key);
    // Only once the call is registered: a deadline that has passed ends it at once, and its end unregisters it.
    running.endAt(byDeadline ? invocation.deadline! : lifetimeEnd);
    runHostTool(target.tool, target.options, invocation, running).catch(() => running.close());
    return new Response(running.body, { headers: { "content-type": "application/x-ndjson" } });
  });

  app.post("/calls/acks", async (c) => {
    const body = await boundedJson(c.req.raw, maxRequestBytes, lifetimeMs);
    const ack = typeof body === "object" && body !== null ? body as ExtensionAck | ExtensionEnded : undefined;
    const call = ack && typeof ack.sessionId === "string" && isSequence(ack.call)
      ? live.get(callKey(ack.sessionId, ack.call))
      : undefined;
    if (ack && "ended" in ack) {
      if (!call || !ENDED_CAUSES.includes(ack.ended)) {
        return c.json(problem("call_finished", "no open call matches this notice"), 404);
      }
      call.close(endedReason(ack.ended));
      return c.body(null, 204);
    }
    if (call && !isAck(ack)) {
      return c.json(problem("protocol_error", "an acknowledgment has a report id and a sequence or an error"), 400);
    }
    if (!call || !call.acknowledge(ack!)) {
      return c.json(problem("call_finished", "no open report matches this acknowledgment"), 404);
    }
    return c.body(null, 204);
  });

  return { fetch: (request: Request) => app.fetch(request) };
}

/** One call's request: the CallSink the runner reports to, streaming each report and awaiting its ack. */
class RequestCall implements CallSink {
  readonly body: ReadableStream<Uint8Array>;
  #controller = new AbortController();
  #stream!: ReadableStreamDefaultController<Uint8Array>;
  #pending = new Map<number, PromiseWithResolvers<ExtensionAck>>();
  #next = 1;
  #closed = false;
  #finished: Finished | undefined;
  #cancelTimer = () => {};
  #byDeadline: boolean;
  #onClose: () => void;

  /** `byDeadline` says the bound {@linkcode endAt} is given is the call's own deadline rather than the lifetime. */
  constructor(byDeadline: boolean, onClose: () => void) {
    this.#byDeadline = byDeadline;
    this.#onClose = onClose;
    this.body = new ReadableStream({
      start: (controller) => void (this.#stream = controller),
      cancel: () => this.close(),
    });
  }

  /** Ends the request at `bound` (ms since the epoch), at once when it has passed. */
  endAt(bound: number): void {
    // callAt: a bound further away than setTimeout can wait would otherwise fire at once.
    this.#cancelTimer = callAt(bound, () => this.#expire());
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  emit(): Promise<number> {
    return Promise.reject(
      new BrainError("permission_denied", "the Application tool extension grants no arbitrary events (ctx.emit)"),
    );
  }

  model(): Promise<ModelResult> {
    return Promise.reject(
      new BrainError("permission_denied", "the Application tool extension grants no model calls (ctx.model)"),
    );
  }

  record(): Promise<JournalRecord[]> {
    return Promise.reject(
      new BrainError("permission_denied", "the Application tool extension grants no Environment control"),
    );
  }

  async emitResult(result: PublishedResult): Promise<number> {
    return committed(await this.#report({ type: "result", ...result }));
  }

  async returned(result?: PublishedResult): Promise<void> {
    await this.#report({ type: "returned", ...result });
  }

  async finish(
    result: PublishedResult | undefined,
    cause: "finish" | "error" | "unknown" = "finish",
  ): Promise<Finished> {
    // A finish after the committed one resolves late with it, as in the host: the first terminal record stands.
    if (this.#finished) return new Finished(this.#finished.sequence, true);
    const ack = await this.#report({ type: "finish", ...result, cause: cause === "unknown" ? "error" : cause });
    try {
      this.#finished = new Finished(committed(ack), ack.late ?? false);
    } finally {
      this.close();
    }
    return this.#finished;
  }

  /** Settles the report `ack` names; false when no such report is waiting. */
  acknowledge(ack: ExtensionAck): boolean {
    const waiting = this.#pending.get(ack.report);
    if (!waiting) return false;
    this.#pending.delete(ack.report);
    if (ack.error) {
      waiting.reject(errorFromWire(ack.error));
    } else waiting.resolve(ack);
    return true;
  }

  /** Ends the request: aborts the Tool's signal (with `reason`, if given) and refuses everything it reports later. */
  close(reason?: BrainError): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#cancelTimer();
    const refused = this.#refusal();
    this.#controller.abort(reason ?? refused);
    for (const waiting of this.#pending.values()) waiting.reject(refused);
    this.#pending.clear();
    try {
      this.#stream.close();
    } catch {
      // The client already cancelled the stream.
    }
    this.#onClose();
  }

  #expire(): void {
    if (this.#closed) return;
    if (this.#byDeadline) {
      // The signal says timeout, as in every other transport; Brain's own deadline ends the call.
      this.#write({
        type: "expired",
        cause: "timeout",
        message: "the call's deadline passed before the Tool finished",
      });
      this.close(endedReason("timeout"));
      return;
    }
    this.#write({ type: "expired", message: "the request lifetime passed before the Tool finished" });
    this.close();
  }

  #report(report: DistributiveOmit<Exclude<ExtensionReport, { type: "expired" }>, "id">): Promise<ExtensionAck> {
    if (this.#closed) return Promise.reject(this.#refusal());
    const id = this.#next++;
    const waiting = Promise.withResolvers<ExtensionAck>();
    this.#pending.set(id, waiting);
    this.#write({ ...report, id } as ExtensionReport);
    return waiting.promise;
  }

  #write(report: ExtensionReport): void {
    try {
      this.#stream.enqueue(encoder.encode(JSON.stringify(report) + "\n"));
    } catch {
      this.close();
    }
  }

  #refusal(): BrainError {
    return new BrainError("lifetime_exceeded", "the extension request has ended; work beyond its lifetime is refused");
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

/** A placed Tool the extension serves, with its options as the JSON text a placement's are compared with. */
type ServedTool = PlacedTool & { configured: string };

/** The options `entry` was configured with, as canonical JSON text: a call's placement must name the same ones. */
function configuredOptions(entry: PlacedTool): string {
  const options = jsonOptions(entry.options);
  if ("nonJson" in options) throw new BrainError("invalid_options", optionsNotJson(entry.tool.name, options.nonJson));
  return canonicalJson(options.json);
}

function differentOptions(tool: string): string {
  return `tool ${tool} is served here with other options than its placement names: the extension's Tool runs with ` +
    `the options it was configured with, so place it with the same ones`;
}

/** A call request: the invocation, and the options its placement names. */
function parseCall(body: unknown): { invocation: Invocation; options: Record<string, JsonValue> } | undefined {
  if (typeof body !== "object" || body === null) return undefined;
  const { sessionId, sequence, tool, input, options, deadline } = body as Record<string, unknown>;
  if (!isSessionId(sessionId) || !isSequence(sequence) || typeof tool !== "string") return undefined;
  if (deadline !== undefined && deadline !== null && !Number.isFinite(deadline)) return undefined;
  if (findNonJson(input) !== undefined) return undefined;
  if (typeof options !== "object" || options === null || Array.isArray(options)) return undefined;
  const invocation: Invocation = {
    sessionId,
    sequence: sequence as number,
    tool,
    input: input as JsonValue,
    deadline: typeof deadline === "number" ? deadline : undefined,
  };
  return { invocation, options: options as Record<string, JsonValue> };
}

/**
 * The request's JSON body, read up to `maxBytes`; undefined when it is not JSON. Throws `payload_too_large`,
 * or `timeout` when the body has not ended within `lifetimeMs`.
 */
async function boundedJson(request: Request, maxBytes: number, lifetimeMs: number): Promise<unknown> {
  // A body that never ends holds the request no longer than a call may run.
  const late = new AbortController();
  const cancel = callAt(Date.now() + lifetimeMs, () => {
    late.abort(new BrainError("timeout", `the request body did not end within the lifetime of ${lifetimeMs} ms`));
  });
  let text: string;
  try {
    text = await readBounded(request.body, "the request body", maxBytes, late.signal);
  } finally {
    cancel();
  }
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

/** The sequence an acknowledgment of a result or finish carries; `protocol_error` when it carries none. */
function committed(ack: ExtensionAck): number {
  if (ack.sequence === undefined) {
    throw new BrainError("protocol_error", "Brain acknowledged a report without its sequence");
  }
  return ack.sequence;
}

/** A well-formed acknowledgment: a report id and either the committed sequence or an error with a code and message. */
function isAck(ack: ExtensionAck | undefined): ack is ExtensionAck {
  if (ack === undefined || !isSequence(ack.report) || (ack.late !== undefined && typeof ack.late !== "boolean")) {
    return false;
  }
  const error = ack.error as unknown;
  if (error === undefined) return ack.sequence === undefined || isSequence(ack.sequence);
  if (typeof error !== "object" || error === null) return false;
  const { code, message, details } = error as Record<string, unknown>;
  return typeof code === "string" && typeof message === "string" &&
    (details === undefined || findNonJson(details) === undefined);
}

function isSessionId(value: unknown): value is string {
  try {
    return checkSessionId(value) === value;
  } catch {
    return false;
  }
}

function isSequence(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

function callKey(sessionId: string, sequence: number): string {
  return `${sessionId}#${sequence}`;
}

function problem(code: BrainErrorCode, message: string): { error: { code: BrainErrorCode; message: string } } {
  return { error: { code, message } };
}
