import { InMemoryTaskStore } from "@modelcontextprotocol/sdk/experimental/tasks";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { Task } from "@modelcontextprotocol/sdk/types.js";
import type { ToolCall } from "../session/session.ts";

/**
 * The MCP tasks of one served connection, kept in the SDK's in-memory store, each
 * bound to the Brain call it runs: a client's `tasks/cancel` cancels that call.
 */
export class CallTasks extends InMemoryTaskStore {
  #calls = new Map<string, ToolCall>();

  /** Binds task `taskId` to `call` until the call ends. */
  bind(taskId: string, call: ToolCall): void {
    this.#calls.set(taskId, call);
    call.ended.finally(() => this.#calls.delete(taskId)).catch(() => {});
  }

  override async updateTaskStatus(
    taskId: string,
    status: Task["status"],
    statusMessage?: string,
    sessionId?: string,
  ): Promise<void> {
    await super.updateTaskStatus(taskId, status, statusMessage, sessionId);
    if (status === "cancelled") await this.#calls.get(taskId)?.cancel("the MCP client cancelled the task");
  }
}
