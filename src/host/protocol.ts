/**
 * The host wire protocol: JSON text frames on one WebSocket per Brain client;
 * the frames one side writes in the same tick travel as one message, a JSON array.
 * The client sends requests (`id` + `op`) and notices (`op`, no id); Brain
 * answers each request with one `reply` and pushes `invoke`, `abort`, `ended`,
 * `gone`, `record`, `closed`, `ping`, `parse` and `telemetry` frames on its own. A call's `finish`
 * is answered by its `ended` push, and a `start` whose call this client hosts
 * carries its invoke in the reply, so the common path is four frames.
 *
 * A client names the version it speaks in its upgrade (`?protocol=3`); one that
 * names none speaks version 1. The server names its own in the upgrade's answer
 * ({@linkcode PROTOCOL_HEADER}); one that names none speaks version 1 or 2, and a
 * client sends it no field or request of a later version. A client ignores the
 * fields and frame types it does not know, so a new field or push reaches an old
 * client harmlessly; what an old client would be left waiting by (an `ended`
 * that carries an error instead of the end the journal later has) is sent only
 * to a client of the version that reads it. A server checks its rare requests
 * strictly: a client adds no field to them that an older server would refuse.
 */
import { z } from "zod";
import type { AdvertisedTool, JournalRecord, RecordBody, SessionMeta, TerminalCause } from "../journal/records.ts";
import { errorText } from "../util/error_text.ts";
import { BrainError } from "../outcome/errors.ts";
import { findNonJson, type JsonValue } from "../outcome/json.ts";
import { isEnvelope, type Outcome, parseEnvelope } from "../outcome/outcome.ts";
import { isTerminalCause } from "../contract/call.ts";
import type { CallEnd } from "../session/call_state.ts";
import type { AssistantMessage } from "../session/conversation.ts";
import type { ModelRequest, ModelResult } from "../model/types.ts";
import type { TelemetryEntry } from "../component/sandbox.ts";
import { isName as isSafeName } from "../util/names.ts";

/**
 * The protocol version this code speaks. Version 2 adds the `gone` push (the server
 * gave a handle up on its own), `ended` pushes that carry the error a call's end
 * could not commit with, and the usage of a call's named activation on its frames.
 * Version 3 reopens sessions that hold uploaded Components: the `upload` request
 * gives the server the bytes it lacks, and `get` and `attach` name each Component
 * of a handle by its content hash, as `create` does.
 */
export const PROTOCOL_VERSION = 3;

/** The version from which `get` and `attach` name a handle's Component uploads and `upload` exists. */
export const COMPONENTS_REOPENED = 3;

/** The header of the upgrade's answer in which a server names the protocol version it speaks. */
export const PROTOCOL_HEADER = "brain-protocol";

/**
 * The version a peer speaks by what it names: a client by the `protocol` parameter of its upgrade,
 * a server by the {@linkcode PROTOCOL_HEADER} of its answer. 1 when it names none or no version.
 */
export function protocolVersion(named: string | undefined): number {
  const version = Number(named);
  return Number.isSafeInteger(version) && version >= 1 ? Math.min(version, PROTOCOL_VERSION) : 1;
}

/** Path of the WebSocket endpoint a host connects to. */
export const HOST_PATH = "/v1/host";

/** Close code of a socket refused because another instance of the same host is connected. */
export const HOST_IN_USE = 4009;

/**
 * Close code of a socket whose host belongs on another server of the cluster:
 * that server owns a session the host opens, and its URL, read from its
 * heartbeat in the shared journal, is the close reason. The client connects there.
 */
export const MOVED = 4010;

// Frames come from JSON.parse, so every present value is already JSON.
const json = z.custom<JsonValue>((value) => value !== undefined, { message: "a JSON value is required" });
/** The longest name a frame carries: a host-scoped session key (`host~session`) with room to spare. */
const MAX_FRAME_NAME = 300;
const name = z.string().min(1).max(MAX_FRAME_NAME);
const sequence = z.number().int().positive();

const advertised = z.strictObject({
  name,
  description: z.string(),
  inputSchema: z.record(z.string(), json),
  outputSchema: z.record(z.string(), json).optional(),
  implementation: z.enum(["host", "component", "descriptor", "http"]),
  env: z.string().optional(),
}) satisfies z.ZodType<AdvertisedTool>;

/**
 * A Component placement a client uploads at `create` (and, from version 3, names
 * again at `get` and `attach`): its content hash, its bytes (base64) unless
 * `lacking` said the server has them, its Environment grant and parsed options.
 */
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);
const upload = z.strictObject({
  tool: name,
  url: z.string(),
  sha256,
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
  uploads: z.array(upload).optional(),
  ...conversation,
});
const call = { session: name, call: sequence };

/** An Environment's name: one that cannot be a path, since a session's journal later rebuilds it. */
const environmentName = z.string().refine(isSafeName, {
  message: "an Environment name is letters, digits, -, _ and . not starting with ., at most 128",
});
/** An Environment's description: the JSON object its `describe()` gave. */
const description = z.record(z.string(), json);

/** Environment changes a host records through one of its calls (`ctx.environments` run in the client). */
const environmentRecord = z.discriminatedUnion("kind", [
  z.strictObject({ kind: z.literal("environment_created"), call: sequence, environment: environmentName, description }),
  z.strictObject({ kind: z.literal("environment_updated"), call: sequence, environment: environmentName, description }),
  z.strictObject({ kind: z.literal("environment_deleted"), call: sequence, environment: environmentName }),
  z.strictObject({
    kind: z.literal("environment_setup"),
    call: sequence,
    environment: environmentName,
    outcome: z.custom<Outcome>(isOutcome, { message: "not a well-formed outcome envelope" }),
  }),
]) satisfies z.ZodType<RecordBody>;

/** Requests that are rare enough to be checked with zod; the hot ones are checked by hand below. */
const coldFrame = z.discriminatedUnion("op", [
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
  z.strictObject({ id: sequence, op: z.literal("get"), ...handle.shape, waitMs: z.number().min(0).optional() }),
  z.strictObject({ id: sequence, op: z.literal("lacking"), sha256: z.array(z.string()) }),
  z.strictObject({ id: sequence, op: z.literal("upload"), url: z.string(), sha256, bytes: z.string() }),
  z.strictObject({ id: sequence, op: z.literal("delete"), session: name }),
  z.strictObject({ id: sequence, op: z.literal("list") }),
  z.strictObject({ id: sequence, op: z.literal("end"), handle: name }),
  z.strictObject({ id: sequence, op: z.literal("send"), handle: name, content: z.string() }),
  z.strictObject({ id: sequence, op: z.literal("interrupt"), handle: name }),
  z.strictObject({ id: sequence, op: z.literal("wait"), ...call }),
  z.strictObject({ id: sequence, op: z.literal("cancel"), ...call, message: z.string().optional() }),
  z.strictObject({
    id: sequence,
    op: z.literal("read"),
    session: name,
    from: sequence.optional(),
    limit: z.number().int().nonnegative().optional(),
  }),
  z.strictObject({ id: sequence, op: z.literal("subscribe"), session: name, from: sequence.optional() }),
  z.strictObject({ id: sequence, op: z.literal("unsubscribe"), stream: sequence }),
  z.strictObject({ id: sequence, op: z.literal("model"), ...call, request: z.custom<ModelRequest>(isObject) }),
  z.strictObject({ id: sequence, op: z.literal("record"), ...call, records: z.array(environmentRecord).min(1) }),
  z.strictObject({ op: z.literal("parsed"), ask: sequence, value: json.optional(), error: json.optional() }),
]);

type ColdFrame = z.infer<typeof coldFrame>;
type Published = { outcome: Outcome; content?: string };

/** Every frame a host client sends: requests carry an `id` their reply answers. */
export type ClientFrame =
  | ColdFrame
  | {
    id: number;
    op: "start";
    handle: string;
    tool: string;
    input: JsonValue;
    deadline?: number;
    activation?: string;
    /** The caller's W3C traceparent: the call's span on the server becomes its child. */
    traceparent?: string;
    /** The caller's signal was aborted before the start: the call ends `cancelled` before dispatch, as embedded. */
    cancelled?: true;
  }
  | { id: number; op: "emit"; session: string; call: number; event: string; data: JsonValue }
  | { id: number; op: "result"; session: string; call: number } & Published
  | { id: number; op: "returned"; session: string; call: number } & Partial<Published>
  | { id: number; op: "finish"; session: string; call: number; cause: "finish" | "error" | "unknown" }
    & Partial<Published>
  | { op: "ping" }
  | { op: "pong" };

/** The operation a frame names. */
export type ClientOp = ClientFrame["op"];
/** Operations a reply answers. */
export type RequestOp = Extract<ClientFrame, { id: number }>["op"];
/** A request frame of operation `O`, as it travels: its `id` first, so an oversized one's id is read unparsed. */
export type RequestFrame<O extends RequestOp> = Extract<ClientFrame, { op: O; id: number }>;
/** A request of operation `O`, without its id. */
export type RequestOf<O extends RequestOp> = Omit<Extract<ClientFrame, { op: O }>, "id">;
/** Any request, without its id. */
export type AnyRequest = ClientFrame extends infer F ? F extends { id: number } ? Omit<F, "id"> : never : never;
/** A notice of operation `O`: a frame no reply answers. */
export type NoticeOf<O extends Exclude<ClientOp, RequestOp>> = Extract<ClientFrame, { op: O }>;
/** Agentloop options as a request carries them. */
export type WireAgentloop = z.infer<typeof agentloop>;

/** What a `finish` resolves with: its terminal record's sequence, and whether the call had ended before it. */
export interface FinishReply {
  /** Sequence of the call's terminal record. */
  sequence: number;
  /** True when the call had already ended. */
  late: boolean;
}

/** What a `start` resolves with; `run` says this client hosts the call and runs it now (no `invoke` follows). */
export interface StartReply {
  /** Sequence of the call's `tool_call_started` record. */
  call: number;
  /** Present when the invoke travels with this reply. */
  run?: true;
  /** With `run`: the traceparent the invoke would carry. */
  traceparent?: string;
}

/** What one activation of a session may spend on the server: the budgets it applies, not the client's defaults. */
export interface Budgets {
  /** Bytes its Tools' results and events may emit. */
  maxEmittedBytes: number;
  /** Model calls it may make. */
  maxModelCalls: number;
}

/** What a call's named activation has spent on the server, as far as the frame that carries it. */
export interface Usage {
  /** Bytes its Tools' results and events have emitted. */
  emittedBytes: number;
  /** Model calls it has made. */
  modelCalls: number;
}

/** The value each request's reply carries. */
export interface Replies {
  /**
   * Handles that could not be reopened and why, the budgets of those that were
   * (this server's, which may differ from the last one's), and the largest message (bytes) the server reads.
   */
  attach: {
    failed: { handle: string; error: WireError }[];
    opened?: { handle: string; budgets: Budgets }[];
    maxFrameBytes: number;
  };
  /** The budgets the server gives each activation of the new session. */
  create: Budgets;
  /** The budgets the server gives each activation of the reopened session. */
  get: Budgets;
  /** Hashes the server has never received. */
  lacking: string[];
  /** Nothing: the server keeps the Component's bytes for this host. */
  upload: null;
  /** Nothing. */
  delete: null;
  /** The host's sessions. */
  list: SessionMeta[];
  /** Nothing. */
  end: null;
  /** The reply that ended the activation. */
  send: AssistantMessage;
  /** Nothing. */
  interrupt: null;
  /** The started call. */
  start: StartReply;
  /** The call's end, or null when no record says it ended. */
  wait: CallEnd | null;
  /** The call's end. */
  cancel: CallEnd;
  /** Committed records. */
  read: JournalRecord[];
  /** Nothing: `record` frames follow. */
  subscribe: null;
  /** Nothing. */
  unsubscribe: null;
  /** The committed event's sequence. */
  emit: number;
  /** The model's answer. */
  model: ModelResult;
  /** The committed result's sequence. */
  result: number;
  /** Nothing. */
  returned: null;
  /** The terminal record (answered by the call's `ended` push). */
  finish: FinishReply;
  /** The committed records. */
  record: JournalRecord[];
}

/** An error as it crosses the wire: its stable code, message and details. */
export interface WireError {
  /** The stable code. */
  code: string;
  /** What went wrong. */
  message: string;
  /** JSON details. */
  details?: JsonValue;
}

/** Every frame Brain sends a host client. */
export type ServerFrame =
  | { t: "reply"; id: number; value?: unknown; error?: WireError; usage?: Usage }
  | {
    t: "invoke";
    handle: string;
    session: string;
    call: number;
    tool: string;
    input: JsonValue;
    deadline?: number;
    /** The W3C traceparent of the call's span on the server: the host's spans of the call join its trace. */
    traceparent?: string;
  }
  | { t: "abort"; session: string; call: number; cause: TerminalCause }
  | {
    t: "ended";
    session: string;
    call: number;
    /** How the call ended; absent when its end could not commit here, and `error` says why (version 2). */
    end?: CallEnd;
    error?: WireError;
    id?: number;
    late?: boolean;
    usage?: Usage;
  }
  /** The server gave a handle up on its own, for `error` (version 2): everything asked of it fails now. */
  | { t: "gone"; handle: string; error: WireError }
  | { t: "record"; stream: number; record: JournalRecord }
  /** A record stream ended: by its session's deletion when `error` says so (version 3), else quietly. */
  | { t: "closed"; stream: number; error?: WireError }
  | { t: "parse"; ask: number; handle: string; tool: string; io: "input" | "output"; value: JsonValue }
  /** An entry an uploaded Component of the handle reported through `telemetry`, for its listener (best-effort). */
  | { t: "telemetry"; handle: string; entry: TelemetryEntry }
  | { t: "ping" }
  | { t: "pong" };

/** A frame that is not one: why, and what it belongs to as far as it can be told. */
export interface Malformed {
  /** Always true. */
  malformed: true;
  /** Why it is not a frame. */
  message: string;
  /** The request id it carries, so its reply can say why. */
  id?: number;
  /** The call it names. */
  session?: string;
  /** The call it names. */
  call?: number;
  /** The operation or type it names. */
  kind?: string;
}

/**
 * Parses one text message from a host client: a frame, or a JSON array of frames
 * written in the same tick. A malformed frame says what it belongs to.
 */
export function decodeClientFrames(data: unknown): (ClientFrame | Malformed)[] {
  const parsed = parseJson(data);
  return Array.isArray(parsed) && parsed.length > 0 ? parsed.map(clientFrame) : [clientFrame(parsed)];
}

/** Parses one text message from Brain: a frame, or a JSON array of frames; a malformed one says what it belongs to. */
export function decodeServerFrames(data: unknown): (ServerFrame | Malformed)[] {
  const parsed = parseJson(data);
  return Array.isArray(parsed) && parsed.length > 0 ? parsed.map(serverFrame) : [serverFrame(parsed)];
}

function clientFrame(parsed: unknown): ClientFrame | Malformed {
  if (!isObject(parsed)) return malformed(parsed, "a frame is a JSON object");
  const frame = parsed as Record<string, unknown>;
  const why = checkHot(frame);
  if (why === null) return frame as ClientFrame;
  if (why !== undefined) return malformed(frame, why);
  // Rare frames carry whole declarations and descriptions that Brain keeps: none may nest past what it stores.
  const deep = findNonJson(frame);
  if (deep !== undefined) return malformed(frame, `malformed frame: ${deep}`);
  const cold = coldFrame.safeParse(frame);
  if (cold.success) return cold.data;
  return malformed(frame, `malformed frame: ${z.prettifyError(cold.error)}`);
}

function serverFrame(parsed: unknown): ServerFrame | Malformed {
  if (!isObject(parsed)) return malformed(parsed, "a frame is a JSON object");
  const frame = parsed as Record<string, unknown>;
  const why = checkServerFrame(frame);
  return why === undefined ? frame as ServerFrame : malformed(frame, why);
}

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

/** True when `decoded` is a frame that failed to parse. */
export function isMalformed(decoded: object): decoded is Malformed {
  return "malformed" in decoded;
}

/** An error as it crosses the wire: its stable code, message and details. */
export function errorFrame(error: unknown): WireError {
  if (error instanceof BrainError) {
    return error.details === undefined
      ? { code: error.code, message: error.message }
      : { code: error.code, message: error.message, details: error.details };
  }
  return { code: "protocol_error", message: errorText(error) };
}

/** Undefined for a well-formed hot frame's absence (not hot), null when it is a well-formed hot frame. */
function checkHot(frame: Record<string, unknown>): string | null | undefined {
  switch (frame.op) {
    case "start":
      if (!isSequence(frame.id)) return "a request needs a positive integer id";
      if (!isName(frame.handle) || !isName(frame.tool)) return "start names a handle and a tool";
      if (frame.input === undefined) return "start carries an input";
      if (frame.deadline !== undefined && typeof frame.deadline !== "number") return "a deadline is a number";
      if (frame.activation !== undefined && !isName(frame.activation)) return "an activation is a name";
      if (frame.traceparent !== undefined && typeof frame.traceparent !== "string") return "a traceparent is a string";
      if (frame.cancelled !== undefined && frame.cancelled !== true) return "cancelled is true or absent";
      return null;
    case "emit":
      return checkReport(frame) ??
        (typeof frame.event === "string" && frame.data !== undefined ? null : "emit carries an event and data");
    case "result":
      return checkReport(frame) ?? checkPublished(frame, true);
    case "returned":
      return checkReport(frame) ?? checkPublished(frame, false);
    case "finish":
      return checkReport(frame) ?? checkPublished(frame, false) ??
        (frame.cause === "finish" || frame.cause === "error" || frame.cause === "unknown"
          ? null
          : "a finish's cause is finish, error or unknown") ??
        (frame.cause !== "unknown" || frame.outcome === undefined ||
            (frame.outcome as { status?: unknown }).status === "unknown"
          ? null
          : "an unknown finish carries an unknown outcome or none");
    case "ping":
    case "pong":
      return null;
    default:
      return undefined;
  }
}

function checkReport(frame: Record<string, unknown>): string | undefined {
  if (!isSequence(frame.id)) return "a request needs a positive integer id";
  if (!isName(frame.session) || !isSequence(frame.call)) return "a report names its session and call";
  return undefined;
}

function checkPublished(frame: Record<string, unknown>, required: boolean): string | null | undefined {
  if (frame.outcome === undefined) {
    if (required) return "a result carries an outcome";
    return frame.content === undefined ? null : "content represents a result: a report without an outcome has none";
  }
  if (!isOutcome(frame.outcome)) return "not a well-formed outcome envelope";
  return frame.content === undefined || typeof frame.content === "string" ? null : "content is a string";
}

function checkServerFrame(frame: Record<string, unknown>): string | undefined {
  switch (frame.t) {
    case "reply":
      if (!isSequence(frame.id)) return "a reply needs a positive integer id";
      if (frame.usage !== undefined && !isUsage(frame.usage)) return "a reply's usage is malformed";
      return frame.error === undefined || isWireError(frame.error) ? undefined : "a reply's error is malformed";
    case "invoke":
      if (!isName(frame.handle) || !isName(frame.session) || !isSequence(frame.call)) return "invoke names a call";
      if (!isName(frame.tool) || frame.input === undefined) return "invoke carries a tool and an input";
      if (frame.traceparent !== undefined && typeof frame.traceparent !== "string") return "a traceparent is a string";
      return frame.deadline === undefined || typeof frame.deadline === "number" ? undefined : "a deadline is a number";
    case "abort":
      if (!isName(frame.session) || !isSequence(frame.call)) return "abort names a call";
      return isTerminalCause(frame.cause) ? undefined : "abort carries a terminal cause";
    case "ended":
      if (!isName(frame.session) || !isSequence(frame.call)) return "ended names a call";
      if (frame.id !== undefined && !isSequence(frame.id)) return "ended answers a request id";
      if (frame.usage !== undefined && !isUsage(frame.usage)) return "ended carries a malformed usage";
      if (frame.end === undefined && frame.id === undefined && isWireError(frame.error)) return undefined;
      return isEnd(frame.end) ? undefined : "ended carries the call's end";
    case "gone":
      return isName(frame.handle) && isWireError(frame.error) ? undefined : "gone names a handle and an error";
    case "record":
      return isSequence(frame.stream) && isRecord(frame.record) ? undefined : "record carries a stream and a record";
    case "closed":
      if (frame.error !== undefined && !isWireError(frame.error)) return "closed carries a malformed error";
      return isSequence(frame.stream) ? undefined : "closed names a stream";
    case "parse":
      if (!isSequence(frame.ask) || !isName(frame.handle) || !isName(frame.tool)) return "parse names its request";
      return (frame.io === "input" || frame.io === "output") && frame.value !== undefined
        ? undefined
        : "parse carries input or output";
    case "telemetry":
      return isName(frame.handle) && isTelemetryEntry(frame.entry)
        ? undefined
        : "telemetry names a handle and an entry";
    case "ping":
    case "pong":
      return undefined;
    default:
      return `unknown frame type ${JSON.stringify(frame.t)}`;
  }
}

/**
 * Undefined when `value` has the shape of the value a reply to a request of
 * operation `op` carries, else why not: a client hands no peer's value on that
 * it would not have made itself.
 */
export function refusedReply(op: RequestOp, value: unknown): string | undefined {
  const check = REPLY_CHECKS[op];
  return check === undefined || check(value) ? undefined : `the reply to ${op} is not ${REPLY_SHAPES[op]}`;
}

const isBudgets = (value: unknown) => {
  if (!isObject(value)) return false;
  const { maxEmittedBytes, maxModelCalls } = value as Record<string, unknown>;
  return isCount(maxEmittedBytes) && isCount(maxModelCalls);
};
const isRecords = (value: unknown) => Array.isArray(value) && value.every(isRecord);
const isEnds = (value: unknown) => isEnd(value);
const REPLY_CHECKS: Partial<Record<RequestOp, (value: unknown) => boolean>> = {
  create: isBudgets,
  get: isBudgets,
  lacking: (value) => Array.isArray(value) && value.every((hash) => typeof hash === "string"),
  list: (value) => Array.isArray(value) && value.every((meta) => isObject(meta) && isName((meta as SessionMeta).id)),
  send: (value) => isRecord(value) && (value as JournalRecord).kind === "assistant_message",
  start: (value) => {
    if (!isObject(value)) return false;
    const { call, run, traceparent } = value as Record<string, unknown>;
    return isSequence(call) && (run === undefined || run === true) &&
      (traceparent === undefined || typeof traceparent === "string");
  },
  wait: (value) => value === null || isEnd(value),
  cancel: isEnds,
  read: isRecords,
  record: isRecords,
  emit: isSequence,
  result: isSequence,
  model: (value) => {
    if (!isObject(value)) return false;
    const { content, toolCalls, stopReason, model } = value as Record<string, unknown>;
    return typeof content === "string" && Array.isArray(toolCalls) && typeof stopReason === "string" &&
      typeof model === "string";
  },
};
const REPLY_SHAPES: Partial<Record<RequestOp, string>> = {
  create: "budgets",
  get: "budgets",
  lacking: "a list of hashes",
  list: "a list of sessions",
  send: "an assistant message",
  start: "a started call",
  wait: "a call's end or null",
  cancel: "a call's end",
  read: "a list of records",
  record: "a list of records",
  emit: "a sequence",
  result: "a sequence",
  model: "a model's answer",
};

/** A committed record as it travels: an object with a kind and a sequence. */
function isRecord(record: unknown): record is JournalRecord {
  return isObject(record) && typeof (record as JournalRecord).kind === "string" &&
    isSequence((record as JournalRecord).sequence);
}

function isCount(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}

function isEnd(end: unknown): end is CallEnd {
  if (!isObject(end)) return false;
  const { call, sequence, cause, outcome } = end as Record<string, unknown>;
  return isSequence(call) && isSequence(sequence) && isTerminalCause(cause) && isOutcome(outcome);
}

function isUsage(usage: unknown): usage is Usage {
  if (!isObject(usage)) return false;
  const { emittedBytes, modelCalls } = usage as Record<string, unknown>;
  return Number.isSafeInteger(emittedBytes) && (emittedBytes as number) >= 0 && Number.isSafeInteger(modelCalls) &&
    (modelCalls as number) >= 0;
}

function isTelemetryEntry(entry: unknown): entry is TelemetryEntry {
  if (!isObject(entry)) return false;
  const { tool, call, level, message, code } = entry as Record<string, unknown>;
  return isName(tool) && isSequence(call) && typeof level === "string" && typeof message === "string" &&
    (code === undefined || typeof code === "string");
}

function isWireError(error: unknown): error is WireError {
  return isObject(error) && typeof (error as WireError).code === "string" &&
    typeof (error as WireError).message === "string";
}

/** An outcome envelope; an `ok` one is checked by hand, the rare others by their schema. */
function isOutcome(value: unknown): value is Outcome {
  if (!isEnvelope(value)) return false;
  if (value.status === "ok") return Object.keys(value).length === 2 && "value" in value;
  return !("malformed" in parseEnvelope(value));
}

function parseJson(data: unknown): unknown {
  if (typeof data !== "string") return undefined;
  try {
    return JSON.parse(data);
  } catch {
    return undefined;
  }
}

function malformed(frame: unknown, message: string): Malformed {
  const found: Malformed = { malformed: true, message };
  if (!isObject(frame)) return found;
  const { id, session, call, op, t } = frame as Record<string, unknown>;
  if (isSequence(id)) found.id = id;
  if (isName(session) && isSequence(call)) Object.assign(found, { session, call });
  if (typeof op === "string" || typeof t === "string") found.kind = String(op ?? t);
  return found;
}

function isName(value: unknown): value is string {
  return typeof value === "string" && value.length > 0 && value.length <= MAX_FRAME_NAME;
}

function isSequence(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) > 0;
}

function isObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
