/**
 * The host wire protocol: JSON text frames on one WebSocket per Brain client.
 * The client sends requests (`id` + `op`); Brain answers each with one `reply`
 * and pushes `invoke`, `abort`, `ended`, `record` and `closed` frames on its own.
 * A call started by a client is followed by an `ended` push, so the common path
 * never has the client send two frames in a row (Deno's WebSocket client leaves
 * Nagle's algorithm on, and a second small write would wait for a delayed ACK).
 */
import { z } from "zod";
import type { AdvertisedTool, JournalRecord } from "../journal/records.ts";
import { BrainError, type BrainErrorCode } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { isEnvelope, type Outcome, parseEnvelope } from "../outcome/outcome.ts";
import type { CallEnd } from "../session/call_state.ts";

/** Path of the WebSocket endpoint a host connects to. */
export const HOST_PATH = "/v1/host";

// Frames come from JSON.parse, so every present value is already JSON.
const json = z.custom<JsonValue>((value) => value !== undefined, { message: "a JSON value is required" });
const outcome = z.custom<Outcome>((value) => isEnvelope(value) && !("malformed" in parseEnvelope(value)), {
  message: "not a well-formed outcome envelope",
});
const name = z.string().min(1);
const sequence = z.number().int().positive();

const advertised = z.strictObject({
  name,
  description: z.string(),
  inputSchema: z.record(z.string(), json),
  outputSchema: z.record(z.string(), json).optional(),
  implementation: z.enum(["host", "component"]),
  env: z.string().optional(),
}) satisfies z.ZodType<AdvertisedTool>;

/**
 * A Component placement a client uploads at `create`: its content hash, its
 * bytes (base64) unless `lacking` said the server has them, its Environment
 * grant and parsed options.
 */
const upload = z.strictObject({
  tool: name,
  url: z.string(),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  bytes: z.string().optional(),
  env: z.strictObject({ name, grant: z.record(z.string(), json) }).optional(),
  options: z.record(z.string(), json),
});

/** A Component upload as a `create` request carries it. */
export type WireUpload = z.infer<typeof upload>;

/** Agentloop options as they travel; `toolDeadlineMs: null` is JSON for no deadline (`Infinity`). */
const agentloop = z.strictObject({
  system: z.string().optional(),
  toolDeadlineMs: z.number().positive().nullable().optional(),
});
/** A session's server-side conversation: the name of a server model, and its Agentloop options. */
const conversation = { model: name.optional(), agentloop: agentloop.optional() };

const handle = z.strictObject({
  handle: name,
  session: name,
  tools: z.array(advertised).optional(),
  ...conversation,
});
const call = { session: name, call: sequence };

/** Every request a host client sends; `id` pairs it with its reply. */
export const clientFrame = z.discriminatedUnion("op", [
  z.strictObject({ id: sequence, op: z.literal("attach"), handles: z.array(handle) }),
  z.strictObject({
    id: sequence,
    op: z.literal("create"),
    handle: name,
    session: name,
    tools: z.array(advertised),
    uploads: z.array(upload).optional(),
    ...conversation,
  }),
  z.strictObject({ id: sequence, op: z.literal("get"), ...handle.shape }),
  z.strictObject({ id: sequence, op: z.literal("lacking"), sha256: z.array(z.string()) }),
  z.strictObject({ id: sequence, op: z.literal("delete"), session: name }),
  z.strictObject({ id: sequence, op: z.literal("list") }),
  z.strictObject({ id: sequence, op: z.literal("end"), handle: name }),
  z.strictObject({ id: sequence, op: z.literal("send"), handle: name, content: z.string() }),
  z.strictObject({ id: sequence, op: z.literal("interrupt"), handle: name }),
  z.strictObject({
    id: sequence,
    op: z.literal("start"),
    handle: name,
    tool: name,
    input: json,
    deadline: z.number().optional(),
    activation: name.optional(),
  }),
  z.strictObject({ id: sequence, op: z.literal("wait"), ...call }),
  z.strictObject({ id: sequence, op: z.literal("cancel"), ...call, message: z.string().optional() }),
  z.strictObject({
    id: sequence,
    op: z.literal("read"),
    session: name,
    from: z.number().int().optional(),
    limit: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({ id: sequence, op: z.literal("subscribe"), session: name, from: z.number().int().optional() }),
  z.strictObject({ id: sequence, op: z.literal("unsubscribe"), stream: sequence }),
  z.strictObject({ id: sequence, op: z.literal("emit"), ...call, event: z.string(), data: json }),
  z.strictObject({ id: sequence, op: z.literal("model"), ...call, request: json }),
  z.strictObject({ id: sequence, op: z.literal("result"), ...call, outcome, content: z.string().optional() }),
  z.strictObject({
    id: sequence,
    op: z.literal("returned"),
    ...call,
    outcome: outcome.optional(),
    content: z.string().optional(),
  }),
  z.strictObject({
    id: sequence,
    op: z.literal("finish"),
    ...call,
    outcome: outcome.optional(),
    content: z.string().optional(),
    cause: z.enum(["finish", "error"]),
  }),
]);

/** A request frame from a host client. */
export type ClientFrame = z.infer<typeof clientFrame>;
/** The operation a request names. */
export type ClientOp = ClientFrame["op"];
/** Agentloop options as a request carries them. */
export type WireAgentloop = z.infer<typeof agentloop>;
/** A request of operation `O`, without its id. */
export type RequestOf<O extends ClientOp> = Omit<Extract<ClientFrame, { op: O }>, "id">;

const wireError = z.strictObject({ code: z.string(), message: z.string(), details: json.optional() });

/** Every frame Brain sends a host client. */
export const serverFrame = z.discriminatedUnion("t", [
  z.strictObject({ t: z.literal("reply"), id: sequence, value: json.optional(), error: wireError.optional() }),
  z.strictObject({
    t: z.literal("invoke"),
    handle: name,
    ...call,
    tool: name,
    input: json,
    deadline: z.number().optional(),
  }),
  z.strictObject({ t: z.literal("abort"), ...call, cause: z.string() }),
  z.strictObject({ t: z.literal("ended"), ...call, end: z.custom<CallEnd>((v) => isObject(v)) }),
  z.strictObject({ t: z.literal("record"), stream: sequence, record: z.custom<JournalRecord>((v) => isObject(v)) }),
  z.strictObject({ t: z.literal("closed"), stream: sequence }),
]);

/** A frame from Brain to a host client. */
export type ServerFrame = z.infer<typeof serverFrame>;

/** The header a client presents the server's operator credential in, to register a new host id. */
export const SERVER_TOKEN_HEADER = "brain-server-token";

/**
 * When text frame `data` is longer than `maxBytes` of UTF-8, the
 * `payload_too_large` error for it and the request id its text starts with, if
 * any, so the request can be answered without parsing the frame.
 */
export function oversizeFrame(data: unknown, maxBytes: number): { id?: number; error: BrainError } | undefined {
  if (typeof data !== "string" || data.length * 3 <= maxBytes) return undefined;
  // A UTF-8 text is never shorter in bytes than in UTF-16 code units.
  const bytes = data.length > maxBytes ? data.length : new TextEncoder().encode(data).length;
  if (bytes <= maxBytes) return undefined;
  const id = /^\{"id":(\d{1,15}),/.exec(data.slice(0, 32))?.[1];
  const error = new BrainError("payload_too_large", `a frame of ${bytes} bytes is over this server's ${maxBytes}`, {
    details: { bytes, maxBytes },
  });
  return id === undefined ? { error } : { id: Number(id), error };
}

/** Parses one text frame with `schema`, or throws `protocol_error` saying why it is not one. */
export function decodeFrame<T>(schema: z.ZodType<T>, data: unknown): T {
  if (typeof data !== "string") throw new BrainError("protocol_error", "frames are JSON text");
  let parsed: unknown;
  try {
    parsed = JSON.parse(data);
  } catch {
    throw new BrainError("protocol_error", "a frame is not JSON");
  }
  const result = schema.safeParse(parsed);
  if (!result.success) throw new BrainError("protocol_error", `malformed frame: ${z.prettifyError(result.error)}`);
  return result.data;
}

/** An error as it crosses the wire: its stable code, message and details. */
export function errorFrame(error: unknown): z.infer<typeof wireError> {
  if (error instanceof BrainError) {
    return error.details === undefined
      ? { code: error.code, message: error.message }
      : { code: error.code, message: error.message, details: error.details };
  }
  return { code: "protocol_error", message: error instanceof Error ? error.message : String(error) };
}

/** Rebuilds the BrainError a reply carries. */
export function errorFromFrame(error: z.infer<typeof wireError>): BrainError {
  return new BrainError(
    error.code as BrainErrorCode,
    error.message,
    error.details === undefined ? {} : {
      details: error.details,
    },
  );
}

function isObject(value: unknown): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
