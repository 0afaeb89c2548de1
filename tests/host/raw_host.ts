import { BRAIN_MAX_EMITTED_BYTES, BRAIN_MAX_MODEL_CALLS } from "../../mod.ts";

/**
 * A raw host socket speaking the wire protocol by hand (registering with the operator credential); every frame it
 * receives is kept in `seen`, each frame of a batch (a JSON array) on its own.
 */
export async function rawHost(url: string, host: string, token: string, serverToken = "operator-secret"): Promise<{
  socket: WebSocket;
  closed: Promise<CloseEvent>;
  seen: unknown[];
  next(): Promise<unknown>;
}> {
  const socket = new WebSocket(`${url.replace("http", "ws")}/v1/host?host=${host}`, {
    headers: { authorization: `Bearer ${token}`, "brain-server-token": serverToken },
  } as unknown as string[]);
  const frames: unknown[] = [];
  const seen: unknown[] = [];
  const waiting: ((frame: unknown) => void)[] = [];
  const closed = new Promise<CloseEvent>((resolve) => socket.onclose = resolve);
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    for (const frame of Array.isArray(message) ? message : [message]) {
      seen.push(frame);
      const waiter = waiting.shift();
      if (waiter) waiter(frame);
      else frames.push(frame);
    }
  };
  await new Promise((resolve) => socket.onopen = resolve);
  return {
    socket,
    closed,
    seen,
    next: () => frames.length > 0 ? Promise.resolve(frames.shift()) : new Promise((resolve) => waiting.push(resolve)),
  };
}

/** The reply value of a `create` or `get` on a server with the default budgets: what each activation may spend. */
export const DEFAULT_BUDGETS = { maxEmittedBytes: BRAIN_MAX_EMITTED_BYTES, maxModelCalls: BRAIN_MAX_MODEL_CALLS };
