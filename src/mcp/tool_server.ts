import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { Server } from "@modelcontextprotocol/sdk/server";
// @ts-types="@modelcontextprotocol/sdk/shared/protocol"
import type { RequestTaskStore } from "@modelcontextprotocol/sdk/shared/protocol.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import {
  CallToolRequestSchema,
  type CallToolResult,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool,
} from "@modelcontextprotocol/sdk/types.js";
import type { PlacedTool } from "../contract/placement.ts";
import type { BrainSession } from "../session/handle.ts";
import type { JournalRecord } from "../journal/records.ts";
import { CallTasks } from "./call_tasks.ts";
import { checkCallOptions } from "../session/call_arguments.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";
import { shownValue } from "../util/shown_value.ts";
import { isObject } from "../util/is_object.ts";

/** Options of `serveMcp` and `serveMcpStdio`. */
export interface ServeMcpOptions {
  /** The server name MCP clients see; `brain` by default. */
  name?: string;
  /** Deadline of each call, in ms from its start; none by default. */
  deadlineMs?: number;
}

/** The longest ttl of an MCP task, in ms: the longest wait of a timer (about 24.8 days). */
const MAX_TASK_TTL_MS = 2 ** 31 - 1;

/**
 * An MCP server (the SDK's `Server`) over one Brain session's placed Tools.
 * `tools/list` gives each Tool with its input JSON Schema (`io: "input"`) and its
 * output schema when that describes an object (MCP's structured content is one).
 * `tools/call` starts the Tool through the session's journal, sends each
 * committed `tool_event` as a progress notification (when the client asked for
 * progress) before answering, and answers with the finishing result: its value as
 * `structuredContent` when it is an object, and its content text (or its JSON). A
 * failed outcome is an error result that names its status; `unknown` says the
 * Tool may or may not have run. An MCP cancellation cancels the call. A client
 * that supports MCP tasks may run any Tool as a task (for background Tools that
 * return before they finish): its Events and its return become status messages,
 * its end the task's result, and `tasks/cancel` cancels the call.
 */
export function toolServer(session: BrainSession, options: ServeMcpOptions): Server {
  const { name = "brain", deadlineMs } = options;
  const tasks = new CallTasks();
  const server = new Server({ name, version: "1" }, {
    capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } },
    taskStore: tasks,
  });
  server.onclose = chain(server.onclose, () => tasks.cleanup());
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: session.tools.map(listed) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const placed = session.tools.find((entry) => entry.tool.name === request.params.name);
    if (!placed) throw new McpError(ErrorCode.InvalidParams, `no tool ${request.params.name} is served`);
    const task = request.params.task;
    const ttl = task?.ttl;
    // The SDK keeps a task for ttl ms on a timer: a ttl a timer cannot wait would drop the task at once.
    if (ttl !== undefined && ttl !== null && !(Number.isSafeInteger(ttl) && ttl > 0 && ttl <= MAX_TASK_TTL_MS)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `a task's ttl must be a whole number of ms from 1 to ${MAX_TASK_TTL_MS}`,
      );
    }
    const call = await session.start(placed, (request.params.arguments ?? {}) as JsonValue, {
      ...(deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs }),
      // A task outlives its request: only tasks/cancel cancels it.
      ...(task ? {} : { signal: extra.signal }),
    }).catch((error) => {
      throw refusal(error);
    });
    if (task && extra.taskStore) {
      const created = await extra.taskStore.createTask({ ttl: task.ttl });
      tasks.bind(created.taskId, call);
      void settleTask(session, call.sequence, placed, extra.taskStore, created.taskId);
      return { task: created };
    }
    const token = request.params._meta?.progressToken;
    const outcome = await followCall(session, call.sequence, async (record) => {
      if (record.kind !== "tool_event" || token === undefined) return;
      await extra.sendNotification({
        method: "notifications/progress",
        params: {
          progressToken: token,
          progress: record.sequence,
          message: JSON.stringify({ event: record.event, data: record.data }),
        },
      });
    });
    return await answer(session, call.sequence, outcome, placed);
  });
  return server;
}

/**
 * Follows one call's committed records, awaiting `each` for every one before the
 * next, and resolves with the outcome of its terminal record.
 */
async function followCall(
  session: BrainSession,
  call: number,
  each: (record: JournalRecord) => Promise<void>,
): Promise<Outcome> {
  const follow = new AbortController();
  try {
    for await (const record of session.records({ from: call, signal: follow.signal })) {
      if (!("call" in record) || record.call !== call) continue;
      if (record.kind === "tool_call_finished") return record.outcome;
      await each(record);
    }
  } finally {
    follow.abort();
  }
  throw new McpError(ErrorCode.InternalError, "the session ended before the call finished");
}

/**
 * Runs a call offered as an MCP task: each Event and the end of the synchronous
 * phase become the task's status message, and the call's end its result
 * (`completed` when ok, else `failed`). A task the client cancelled keeps its status.
 */
async function settleTask(
  session: BrainSession,
  call: number,
  placed: PlacedTool,
  store: RequestTaskStore,
  taskId: string,
): Promise<void> {
  const status = (message: string) => store.updateTaskStatus(taskId, "working", message).catch(() => {});
  try {
    const outcome = await followCall(session, call, async (record) => {
      if (record.kind === "tool_event") await status(JSON.stringify({ event: record.event, data: record.data }));
      if (record.kind === "tool_returned") await status("returned; the Tool runs on in the background");
    });
    const result = await answer(session, call, outcome, placed);
    await store.storeTaskResult(taskId, outcome.status === "ok" ? "completed" : "failed", result);
  } catch {
    // The task was cancelled (or the connection closed) first.
  }
}

/**
 * A call Brain refused to start, as a JSON-RPC error naming its code in `data`:
 * input or arguments it refused are the client's invalid params.
 */
function refusal(error: unknown): unknown {
  if (!(error instanceof BrainError)) return error;
  const theirs = error.code === "invalid_input" || error.code === "invalid_argument" ||
    error.code === "payload_too_large";
  return new McpError(theirs ? ErrorCode.InvalidParams : ErrorCode.InternalError, error.message, {
    code: error.code,
  });
}

function chain(first: (() => void) | undefined, second: () => void): () => void {
  return () => {
    first?.();
    second();
  };
}

/** Throws `invalid_argument` unless `session` is a session handle (a Promise of one is told to be awaited). */
export function checkServedSession(served: string, session: unknown): asserts session is BrainSession {
  let then: unknown;
  let call: unknown;
  let tools: unknown;
  try {
    ({ then, call, tools } = session as { then?: unknown; call?: unknown; tools?: unknown });
  } catch {
    // A Proxy or getter that throws is no session: refused below.
  }
  if (typeof then === "function") {
    throw new BrainError(
      "invalid_argument",
      `${served} takes a session, and this is a Promise: await brain.sessions.create(...) first`,
    );
  }
  if (typeof call !== "function" || !Array.isArray(tools)) {
    throw new BrainError(
      "invalid_argument",
      `${served} takes a session from brain.sessions.create(...) or brain.sessions.get(id, { tools }), ` +
        `got ${shownValue(session)}`,
    );
  }
}

/** Returns `options` when they are well-formed; throws `invalid_argument` otherwise. */
export function checkServeOptions<T extends ServeMcpOptions>(options: T, also: readonly string[] = []): T {
  const read = readOptions("MCP server options", options ?? ({} as T), [...SERVE_OPTIONS, ...also]);
  const { name, deadlineMs } = read;
  if (name !== undefined && (typeof name !== "string" || name === "")) {
    throw new BrainError("invalid_argument", "name must be a non-empty string");
  }
  if (deadlineMs !== undefined) {
    if (!(typeof deadlineMs === "number" && deadlineMs > 0)) {
      throw new BrainError(
        "invalid_argument",
        `deadlineMs must be a positive number of ms, got ${shownValue(deadlineMs)}`,
      );
    }
    // Each call's deadline is now + deadlineMs: refused here, rather than on every call, when no call could take it.
    checkCallOptions({ timeoutMs: deadlineMs });
  }
  return read;
}

const SERVE_OPTIONS = allKeys<ServeMcpOptions>({ name: true, deadlineMs: true });

function listed(placed: PlacedTool): Tool {
  const { name, description, inputSchema, outputSchema } = placed.advertised;
  return {
    name,
    description,
    inputSchema: inputSchema as Tool["inputSchema"],
    execution: { taskSupport: "optional" },
    ...(outputSchema && isObjectSchema(outputSchema) ? { outputSchema: outputSchema as Tool["outputSchema"] } : {}),
  };
}

/** The MCP result of a finished call: its outcome, with the content text of the result that finished it. */
async function answer(session: BrainSession, call: number, outcome: Outcome, placed: PlacedTool) {
  const records = await session.read({ from: call });
  const result = records.findLast((record): record is Extract<JournalRecord, { kind: "tool_result" }> =>
    record.kind === "tool_result" && record.call === call
  );
  const content = result && JSON.stringify(result.outcome) === JSON.stringify(outcome) ? result.content : undefined;
  const text = (value: string): CallToolResult["content"] => [{ type: "text", text: value }];
  switch (outcome.status) {
    case "ok": {
      const structured = isObject(outcome.value) &&
        isObjectSchema(placed.advertised.outputSchema ?? { type: "object" });
      return {
        content: text(content ?? JSON.stringify(outcome.value)),
        ...(structured ? { structuredContent: outcome.value as Record<string, unknown> } : {}),
      };
    }
    case "error":
      return { isError: true, content: text(content ?? `${outcome.error.code}: ${outcome.error.message}`) };
    case "unknown":
      return {
        isError: true,
        content: text(
          `unknown: the connection to the Tool was lost after the call was sent; it may or may not have run` +
            (outcome.message ? ` (${outcome.message})` : ""),
        ),
      };
    default:
      return { isError: true, content: text(`${outcome.status}: ${outcome.message ?? "the call ended"}`) };
  }
}

function isObjectSchema(schema: Record<string, JsonValue> | undefined): boolean {
  return schema?.type === "object";
}
