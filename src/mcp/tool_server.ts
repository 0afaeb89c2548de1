import { Server } from "@modelcontextprotocol/sdk/server";
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
import type { BrainSession } from "../embedded/backend.ts";
import type { JournalRecord } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Outcome } from "../outcome/outcome.ts";

/** Options of `serveMcp` and `serveMcpStdio`. */
export interface ServeMcpOptions {
  /** The server name MCP clients see; `brain` by default. */
  name?: string;
  /** Deadline of each call, in ms from its start; none by default. */
  deadlineMs?: number;
}

/**
 * An MCP server (the SDK's `Server`) over one Brain session's placed Tools.
 * `tools/list` gives each Tool with its input JSON Schema (`io: "input"`) and its
 * output schema when that describes an object (MCP's structured content is one).
 * `tools/call` starts the Tool through the session's journal, sends each
 * committed `tool_event` as a progress notification (when the client asked for
 * progress) before answering, and answers with the finishing result: its value as
 * `structuredContent` when it is an object, and its content text (or its JSON). A
 * failed outcome is an error result that names its status; `unknown` says the
 * Tool may or may not have run. An MCP cancellation cancels the call.
 */
export function toolServer(session: BrainSession, options: ServeMcpOptions): Server {
  const { name = "brain", deadlineMs } = checkServeOptions(options);
  const server = new Server({ name, version: "1" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: session.tools.map(listed) }));
  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const placed = session.tools.find((entry) => entry.tool.name === request.params.name);
    if (!placed) throw new McpError(ErrorCode.InvalidParams, `no tool ${request.params.name} is served`);
    const call = await session.start(placed, (request.params.arguments ?? {}) as JsonValue, {
      ...(deadlineMs === undefined ? {} : { deadline: Date.now() + deadlineMs }),
      signal: extra.signal,
    });
    const token = request.params._meta?.progressToken;
    const follow = new AbortController();
    try {
      for await (const record of session.records({ from: call.sequence, signal: follow.signal })) {
        if (!("call" in record) || record.call !== call.sequence) continue;
        if (record.kind === "tool_event" && token !== undefined) {
          await extra.sendNotification({
            method: "notifications/progress",
            params: {
              progressToken: token,
              progress: record.sequence,
              message: JSON.stringify({ event: record.event, data: record.data }),
            },
          });
        }
        if (record.kind === "tool_call_finished") return await answer(session, call.sequence, record.outcome, placed);
      }
    } finally {
      follow.abort();
    }
    throw new McpError(ErrorCode.InternalError, "the session ended before the call finished");
  });
  return server;
}

/** Returns `options` when they are well-formed; throws `invalid_argument` otherwise. */
export function checkServeOptions(options: ServeMcpOptions): ServeMcpOptions {
  const { name, deadlineMs } = options ?? {};
  if (name !== undefined && (typeof name !== "string" || name === "")) {
    throw new BrainError("invalid_argument", "name must be a non-empty string");
  }
  if (deadlineMs !== undefined && !(typeof deadlineMs === "number" && deadlineMs > 0 && Number.isFinite(deadlineMs))) {
    throw new BrainError("invalid_argument", `deadlineMs must be a positive number of ms, got ${deadlineMs}`);
  }
  return options ?? {};
}

function listed(placed: PlacedTool): Tool {
  const { name, description, inputSchema, outputSchema } = placed.advertised;
  return {
    name,
    description,
    inputSchema: inputSchema as Tool["inputSchema"],
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

function isObject(value: JsonValue): boolean {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
