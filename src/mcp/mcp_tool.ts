// @ts-types="@modelcontextprotocol/sdk/types"
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import type { AdvertisedTool } from "../journal/records.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { Dispatch, Environment, Implementation, PlacedTool, ToolDeclaration } from "../contract/placement.ts";
import { deepFreeze } from "../util/freeze.ts";
import type { McpConnection } from "./mcp_connection.ts";
import { shownValue } from "../util/shown_value.ts";

const TOOL_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/;

/**
 * One MCP server tool placed as a Brain Tool in `env`: named `prefix + tool.name`,
 * its input and output JSON Schemas advertised exactly as the server listed them
 * (the server validates arguments), each call sent once over `connection`.
 */
export function mcpTool(env: Environment, connection: McpConnection, tool: Tool, prefix: string): PlacedTool {
  const name = prefix + tool.name;
  if (!TOOL_NAME.test(name)) {
    throw new BrainError(
      "invalid_tool",
      `environment ${env.name}: MCP tool ${shownValue(tool.name)} cannot be a Brain Tool named ${
        shownValue(name)
      } (names match ${TOOL_NAME.source}); place only the tools you need with tools: [...]`,
    );
  }
  const description = tool.description ?? tool.title ?? "";
  const inputSchema = tool.inputSchema as Record<string, JsonValue>;
  const outputSchema = tool.outputSchema as Record<string, JsonValue> | undefined;
  const declaration: ToolDeclaration = Object.freeze({
    name,
    description,
    input: z.record(z.string(), z.unknown()),
    output: undefined,
    inputSchema,
    outputSchema,
    run: undefined,
  });
  const implementation: Implementation & { descriptor: JsonValue } = Object.freeze({
    kind: "descriptor" as const,
    descriptor: Object.freeze({ type: "mcp_tool", tool: tool.name }),
    admit: () => Promise.resolve(),
    execute: (dispatch: Dispatch) => void connection.call(tool.name, dispatch).catch(() => {}),
  });
  const advertised: AdvertisedTool = { name, description, inputSchema, implementation: "descriptor", env: env.name };
  if (outputSchema) advertised.outputSchema = outputSchema;
  return Object.freeze({
    tool: declaration,
    options: Object.freeze({}),
    env,
    implementation,
    advertised: deepFreeze(structuredClone(advertised)),
  });
}
