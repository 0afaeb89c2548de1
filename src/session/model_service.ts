import { readBounded } from "../util/read_bounded.ts";
import type { ModelAccess } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import type { CallSink } from "../contract/call.ts";
import { sameText } from "../util/same_text.ts";

const status: Partial<Record<string, number>> = {
  unauthorized: 401,
  invalid_argument: 400,
  payload_too_large: 413,
  call_finished: 409,
  budget_exceeded: 429,
  model_unavailable: 503,
  timeout: 504,
};

/**
 * The model execution service of one session: an HTTP endpoint on 127.0.0.1
 * through which Tools of an HTTP Environment granted `model` call the session's
 * model. Each dispatched call gets its own token (`GRANT.SECRET`: the grant id
 * finds the call, the secret is compared in constant time); a request under it is the
 * call's `ctx.model` (same origin, activation budget, journaling and stopping),
 * and the token stops working when the call ends. Answers are the `ModelResult`
 * JSON, or `{ error: { code, message } }` with a 4xx/5xx status.
 */
export class ModelService {
  #calls = new Map<string, { secret: string; sink: CallSink }>();
  #server: Deno.HttpServer<Deno.NetAddr> | undefined;
  #stop = new AbortController();

  /** Grants `sink`'s call access until it ends; the server starts with the first grant. */
  grant(sink: CallSink): ModelAccess {
    this.#server ??= Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {}, signal: this.#stop.signal },
      (request) => this.#handle(request),
    );
    const grant = crypto.randomUUID();
    const secret = crypto.randomUUID();
    this.#calls.set(grant, { secret, sink });
    sink.signal.addEventListener("abort", () => this.#calls.delete(grant), { once: true });
    return { url: `http://127.0.0.1:${this.#server.addr.port}/model`, token: `${grant}.${secret}` };
  }

  /**
   * Stops the server and closes its connections at once; later requests cannot
   * connect. Its calls have ended, so nothing it still answers is wanted; a
   * graceful shutdown would wait forever on a client that never ends a body.
   */
  async close(): Promise<void> {
    this.#calls.clear();
    this.#stop.abort();
    await this.#server?.finished;
  }

  async #handle(request: Request): Promise<Response> {
    try {
      if (request.method !== "POST" || new URL(request.url).pathname !== "/model") {
        throw new BrainError("invalid_argument", "POST a ModelRequest to /model");
      }
      const sink = this.#sink(request.headers.get("authorization"));
      if (!sink) throw new BrainError("unauthorized", "no open call holds this model token");
      // Read no longer than the call lasts: its client may never end the body.
      const text = await readBounded(request.body, "a model request", undefined, sink.signal);
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        throw new BrainError("invalid_argument", "the model request body is not JSON");
      }
      return Response.json(await sink.model(body as never));
    } catch (error) {
      const known = error instanceof BrainError ? error : new BrainError("model_error", String(error));
      return Response.json(
        { error: { code: known.code, message: known.message } },
        { status: status[known.code] ?? 502 },
      );
    }
  }

  /** The call an `authorization` header's token is granted to, its secret compared in constant time. */
  #sink(authorization: string | null): CallSink | undefined {
    const [grant, secret] = /^Bearer ([^.]+)\.(.+)$/.exec(authorization ?? "")?.slice(1) ?? [];
    const granted = grant === undefined ? undefined : this.#calls.get(grant);
    return granted && sameText(granted.secret, secret) ? granted.sink : undefined;
  }
}
