import { checkOwner, type EmbeddedBackend, ownedBy } from "../../embedded/embedded.ts";
import type { Journal } from "../../journal/journal.ts";
import type { AdvertisedTool, JournalRecord, SessionMeta } from "../../journal/records.ts";
import { BrainError } from "../../outcome/errors.ts";
import type { JsonValue } from "../../outcome/json.ts";
import type { Outcome } from "../../outcome/outcome.ts";
import type { PublishedResult } from "../../contract/call.ts";
import type { CallEnd } from "../../session/call_state.ts";
import { Activation } from "../../session/activation.ts";
import type { Session, ToolCall } from "../../session/session.ts";
import type { AgentloopOptions } from "../../agentloop/agentloop.ts";
import type { ModelRequest } from "../../model/types.ts";
import {
  type ClientFrame,
  clientFrame,
  decodeFrame,
  errorFrame,
  oversizeFrame,
  type WireAgentloop,
} from "../protocol.ts";
import { type RegisteredHost, send } from "./registry.ts";
import { remoteTool } from "./remote_tool.ts";
import { uploadedTool } from "./uploaded_tool.ts";
import { checkName } from "../../util/names.ts";

/** Calls started through the server, by `session:call`, until they end. */
export class OpenCalls {
  #calls = new Map<string, ToolCall>();

  /** Keeps `call` until it ends. */
  track(session: string, call: ToolCall): void {
    const key = `${session}:${call.sequence}`;
    this.#calls.set(key, call);
    call.ended.finally(() => this.#calls.delete(key)).catch(() => {});
  }

  /** The open call, if it was started here and has not ended. */
  get(session: string, sequence: number): ToolCall | undefined {
    return this.#calls.get(`${session}:${sequence}`);
  }
}

/** What one host socket needs from its Brain server. */
export interface LinkParts {
  socket: WebSocket;
  host: RegisteredHost;
  backend: EmbeddedBackend;
  calls: OpenCalls;
  /** The largest frame read; a larger one is answered `payload_too_large` unparsed. */
  maxFrameBytes: number;
}

/** How long past a lease a reattaching host waits for the Brain that held it. */
const LEASE_GRACE_MS = 1_000;

/**
 * Serves one host socket: session API requests, and the reports of calls
 * dispatched to the host. Reports are applied to their call in arrival order,
 * synchronously, so the journal sees them in the order the host made them.
 */
export function serveHostSocket({ socket, host, backend, calls, maxFrameBytes }: LinkParts): void {
  const journal = backend.journal;
  const streams = new Map<number, AbortController>();
  const closed = new AbortController();

  const registration = { id: host.id, tokenHash: host.tokenHash };
  const owned = async (session: string): Promise<SessionMeta> => {
    const meta = await journal.getSession(checkName("a session id", session));
    if (!meta) throw new BrainError("session_not_found", `no session ${session}`);
    checkOwner(session, meta.host, registration);
    return meta;
  };
  const handle = (id: string) => {
    const session = host.handles.get(id);
    if (!session) throw new BrainError("session_closed", `session handle ${id} is not open`);
    return session;
  };
  const open = async (
    id: string,
    session: string,
    tools: AdvertisedTool[] | undefined,
    conversation: { model?: string; agentloop?: WireAgentloop },
  ) => {
    const meta = await owned(session);
    if (!host.handles.has(id)) {
      if (tools?.some((tool) => tool.implementation === "component")) {
        throw new BrainError(
          "unsupported_runtime",
          `session ${session}: a session with uploaded Components is reopened only while its handle is open here`,
        );
      }
      const placed = (tools ?? []).map((tool) => remoteTool(host, id, tool));
      // A restarted server waits out the lease of the process it replaces.
      const waitMs = backend.leaseMs + LEASE_GRACE_MS;
      host.handles.set(
        id,
        await backend.get(session, { tools: placed, ...served(conversation), waitMs }, registration),
      );
    }
    return meta;
  };
  const endHandle = async (id: string) => {
    const session = host.handles.get(id);
    host.handles.delete(id);
    await session?.end();
    if (session && ![...host.handles.values()].some((open) => open.id === session.id)) {
      for (const key of host.activations.keys()) if (key.startsWith(`${session.id}:`)) host.activations.delete(key);
    }
  };
  const activation = (session: Session, id: string): Activation => {
    const key = `${session.id}:${id}`;
    let found = host.activations.get(key);
    if (!found) {
      const { maxEmittedBytes, maxModelCalls } = session.activation();
      found = new Activation({ id, maxEmittedBytes, maxModelCalls });
      host.activations.set(key, found);
    }
    return found;
  };

  const operate = (frame: ClientFrame): Promise<unknown> => {
    switch (frame.op) {
      case "emit":
        return host.sink(frame.session, frame.call).emit(frame.event, frame.data);
      case "model":
        // The call's own scope: its activation's budget, its identity as origin, its end stops the request.
        return host.sink(frame.session, frame.call).model(frame.request as unknown as ModelRequest);
      case "result":
        return host.sink(frame.session, frame.call).emitResult(published(frame));
      case "returned":
        return host.sink(frame.session, frame.call).returned(frame.outcome ? published(frame) : undefined);
      case "finish":
        return host.sink(frame.session, frame.call).finish(frame.outcome ? published(frame) : undefined, frame.cause)
          .then(({ sequence, late }) => ({ sequence, late }))
          .finally(() => host.settle(frame.session, frame.call));
      default:
        return request(frame);
    }
  };

  const request = async (frame: ClientFrame): Promise<unknown> => {
    switch (frame.op) {
      case "attach": {
        const declared = new Set(frame.handles.map((declared) => declared.handle));
        await Promise.allSettled([...host.handles.keys()].filter((id) => !declared.has(id)).map(endHandle));
        const failed: string[] = [];
        for (const { handle: id, session, tools, ...conversation } of frame.handles) {
          await open(id, session, tools, conversation).catch(() => failed.push(id));
        }
        return { failed };
      }
      case "create": {
        const uploads = new Map((frame.uploads ?? []).map((upload) => [upload.tool, upload]));
        const tools = await Promise.all(frame.tools.map(async (tool) => {
          if (tool.implementation !== "component") return remoteTool(host, frame.handle, tool);
          const upload = uploads.get(tool.name);
          if (!upload) {
            throw new BrainError("protocol_error", `tool ${tool.name}: a Component placement needs its upload`);
          }
          return uploadedTool(tool, upload, await host.components.component(upload));
        }));
        const session = await host.createSession(
          journal,
          () => backend.create({ id: frame.session, tools, ...served(frame) }, registration),
        );
        host.handles.set(frame.handle, session);
        return null;
      }
      case "lacking":
        return host.components.lacking(frame.sha256);
      case "get":
        await open(frame.handle, frame.session, frame.tools, frame);
        return null;
      case "delete": {
        // Deleting another host's session answers as deleting a missing one does: it is not there for this host.
        const meta = await journal.getSession(checkName("a session id", frame.session));
        if (!meta || !ownedBy(meta.host, registration)) return null;
        const ids = [...host.handles].filter(([, session]) => session.id === frame.session).map(([id]) => id);
        await Promise.allSettled(ids.map(endHandle));
        await backend.delete(frame.session);
        return null;
      }
      case "list":
        return (await backend.list()).filter((meta) => ownedBy(meta.host, registration));
      case "end":
        await endHandle(frame.handle);
        return null;
      case "send":
        // The Agentloop runs here; the reply waits for the activation that answers the message.
        return await handle(frame.handle).send(frame.content);
      case "interrupt":
        handle(frame.handle).interrupt();
        return null;
      case "start": {
        const session = handle(frame.handle);
        const call = await host.startCall(() =>
          session.start(frame.tool, frame.input, {
            deadline: frame.deadline,
            activation: frame.activation === undefined ? undefined : activation(session, frame.activation),
          })
        );
        calls.track(session.id, call);
        call.ended.then((end) => send(socket, { t: "ended", session: session.id, call: call.sequence, end }), () => {});
        return call.sequence;
      }
      case "wait":
        await owned(frame.session);
        return await (calls.get(frame.session, frame.call)?.ended ??
          findEnd(journal.subscribe(frame.session, { from: frame.call, signal: closed.signal }), frame.call));
      case "cancel": {
        await owned(frame.session);
        const call = calls.get(frame.session, frame.call);
        if (call) return await call.cancel(frame.message);
        const ended = await findEnd(await journal.read(frame.session, { from: frame.call }), frame.call);
        if (ended) return ended;
        throw new BrainError("call_not_found", `call ${frame.call} of session ${frame.session} is not open here`);
      }
      case "read":
        await owned(frame.session);
        return await journal.read(frame.session, { from: frame.from, limit: frame.limit });
      case "subscribe": {
        await owned(frame.session);
        const controller = new AbortController();
        streams.set(frame.id, controller);
        forward(journal, socket, frame.id, frame.session, frame.from, controller.signal)
          .finally(() => streams.delete(frame.id));
        return null;
      }
      case "unsubscribe":
        streams.get(frame.stream)?.abort();
        return null;
      default:
        throw new BrainError("protocol_error", `operation ${frame.op} is not a request`);
    }
  };

  socket.onmessage = (event) => {
    const oversize = oversizeFrame(event.data, maxFrameBytes);
    if (oversize) {
      if (oversize.id === undefined) socket.close(1009, "frame too large");
      else send(socket, { t: "reply", id: oversize.id, error: errorFrame(oversize.error) });
      return;
    }
    let frame: ClientFrame;
    try {
      frame = decodeFrame(clientFrame, event.data);
    } catch {
      socket.close(4002, "protocol error");
      return;
    }
    let reply: Promise<unknown>;
    try {
      reply = operate(frame);
    } catch (error) {
      reply = Promise.reject(error);
    }
    reply.then(
      (value) => send(socket, { t: "reply", id: frame.id, value: (value ?? null) as JsonValue }),
      (error) => send(socket, { t: "reply", id: frame.id, error: errorFrame(error) }),
    );
  };
  socket.onclose = () => {
    closed.abort();
    for (const controller of streams.values()) controller.abort();
    host.detach(socket);
  };
}

/** The session's server model by name and its Agentloop options, as the backend takes them. */
function served({ model, agentloop }: { model?: string; agentloop?: WireAgentloop }): {
  model?: string;
  agentloop?: AgentloopOptions;
} {
  if (model === undefined) return {};
  if (agentloop === undefined) return { model };
  const { system, toolDeadlineMs } = agentloop;
  return {
    model,
    agentloop: {
      ...(system === undefined ? {} : { system }),
      ...(toolDeadlineMs === undefined ? {} : { toolDeadlineMs: toolDeadlineMs ?? Infinity }),
    },
  };
}

function published(frame: { outcome?: Outcome; content?: string }): PublishedResult {
  return frame.content === undefined
    ? { outcome: frame.outcome! }
    : { outcome: frame.outcome!, content: frame.content };
}

/** Sends a session's records as `record` frames until `signal` aborts or the journal ends the follow. */
async function forward(
  journal: Journal,
  socket: WebSocket,
  stream: number,
  session: string,
  from: number | undefined,
  signal: AbortSignal,
): Promise<void> {
  try {
    for await (const record of journal.subscribe(session, { from, signal })) {
      send(socket, { t: "record", stream, record });
    }
  } catch {
    // A deleted session or closed journal ends the stream like its end does.
  }
  if (!signal.aborted) send(socket, { t: "closed", stream });
}

/** The end of `call` as its `tool_call_finished` record among `records` tells it, if it is there. */
async function findEnd(records: AsyncIterable<JournalRecord> | JournalRecord[], call: number) {
  for await (const record of records) {
    if (record.kind === "tool_call_finished" && record.call === call) {
      return { call, sequence: record.sequence, cause: record.cause, outcome: record.outcome } satisfies CallEnd;
    }
  }
  return undefined;
}
