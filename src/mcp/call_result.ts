// @ts-types="@modelcontextprotocol/sdk/types"
import type { CallToolResult, ContentBlock, Progress } from "@modelcontextprotocol/sdk/types.js";
import type { JsonValue } from "../outcome/json.ts";
import { fail, ok } from "../outcome/outcome.ts";
import type { PublishedResult } from "../contract/call.ts";

/**
 * An MCP tool result as a Brain result: `structuredContent` (or else the content
 * blocks) as the value, the text of the content blocks as model-facing text, and
 * `isError` as an `error` outcome coded `tool_error` that keeps the content.
 */
export function publishedResult(result: CallToolResult): PublishedResult {
  const content = contentText(result.content);
  if (result.isError) {
    return {
      outcome: fail("tool_error", content || "the MCP tool reported an error", {
        details: { content: result.content as JsonValue },
      }),
      content,
    };
  }
  const value = (result.structuredContent ?? result.content) as JsonValue;
  return content === "" ? { outcome: ok(value) } : { outcome: ok(value), content };
}

/** The text of content blocks, one a line; other blocks are named by type (and MIME type). */
export function contentText(blocks: readonly ContentBlock[]): string {
  return blocks.map((block) => {
    if (block.type === "text") return block.text;
    if (block.type === "resource_link") return `[resource ${block.uri}]`;
    if (block.type === "resource") {
      return "text" in block.resource ? block.resource.text : `[resource ${block.resource.uri}]`;
    }
    return `[${block.type} ${block.mimeType}]`;
  }).join("\n");
}

/** An MCP progress notification as the data of a `progress` Event. */
export function progressData({ progress, total, message }: Progress): JsonValue {
  return {
    progress,
    ...(total === undefined ? {} : { total }),
    ...(message === undefined ? {} : { message }),
  };
}
