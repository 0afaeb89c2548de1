// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import type { JSONRPCMessage } from "@modelcontextprotocol/sdk/types.js";

/** Wraps a client transport to keep every message it sends and receives, in wire order. */
export function recording<T extends Transport>(
  inner: T,
): { transport: Transport; sent: JSONRPCMessage[]; received: JSONRPCMessage[] } {
  const sent: JSONRPCMessage[] = [];
  const received: JSONRPCMessage[] = [];
  const transport: Transport = {
    start: () => inner.start(),
    send: (message, options) => {
      sent.push(message);
      return inner.send(message, options);
    },
    close: () => inner.close(),
    setProtocolVersion: (version) => inner.setProtocolVersion?.(version),
    get sessionId() {
      return inner.sessionId;
    },
  };
  inner.onmessage = (message, extra) => {
    received.push(message);
    transport.onmessage?.(message, extra);
  };
  inner.onclose = () => transport.onclose?.();
  inner.onerror = (error) => transport.onerror?.(error);
  return { transport, sent, received };
}

/** The progress notifications and the response of the last `tools/call` of `tool`, in the order they arrived. */
export function arrivals({ sent, received }: { sent: JSONRPCMessage[]; received: JSONRPCMessage[] }, tool: string) {
  const request = sent.findLast((message) =>
    "method" in message && message.method === "tools/call" && message.params?.name === tool
  ) as { id: unknown; params: { _meta?: { progressToken?: unknown } } };
  const { id, params: { _meta } } = request;
  const token = _meta?.progressToken;
  return received.flatMap((message) => {
    if ("method" in message && message.method === "notifications/progress") {
      return message.params?.progressToken === token ? [`progress ${message.params?.progress}`] : [];
    }
    return "id" in message && message.id === id && !("method" in message) ? ["response"] : [];
  });
}
