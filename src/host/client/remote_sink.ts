import { normalizeModelRequest } from "../../model/request.ts";
import type { ModelRequest, ModelResult } from "../../model/types.ts";
import { BrainError } from "../../outcome/errors.ts";
import type { JsonValue } from "../../outcome/json.ts";
import { Finished } from "../../contract/context.ts";
import type { CallSink, PublishedResult } from "../../contract/call.ts";
import type { HostConnection } from "./connection.ts";

/**
 * The SDK's `CallSink` for a call Brain dispatched over the host connection:
 * each report is one request, resolved by Brain's acknowledgement once it is
 * committed. Reports are only valid on the connection the call arrived on.
 */
export class RemoteSink implements CallSink {
  /** Aborted when Brain ends the call or the connection is lost. */
  readonly signal: AbortSignal;
  #connection: HostConnection;
  #call: { session: string; call: number };
  #generation: number;
  #done: () => void;

  constructor(parts: {
    connection: HostConnection;
    session: string;
    call: number;
    generation: number;
    signal: AbortSignal;
    done: () => void;
  }) {
    this.signal = parts.signal;
    this.#connection = parts.connection;
    this.#call = { session: parts.session, call: parts.call };
    this.#generation = parts.generation;
    this.#done = parts.done;
  }

  /** Commits an extension Event; resolves with its sequence. */
  async emit(event: string, data: JsonValue): Promise<number> {
    return await this.#report("emit", { ...this.#call, event, data }) as number;
  }

  /** Commits a result; resolves with its sequence. */
  async emitResult({ outcome, content }: PublishedResult): Promise<number> {
    return await this.#report("result", { ...this.#call, outcome, content }) as number;
  }

  /** Ends the synchronous phase. */
  async returned(result?: PublishedResult): Promise<void> {
    await this.#report("returned", { ...this.#call, ...result });
  }

  /** Ends the call; the host never reports `unknown`, Brain decides that. */
  async finish(
    result: PublishedResult | undefined,
    cause: "finish" | "error" | "unknown" = "finish",
  ): Promise<Finished> {
    try {
      if (cause === "unknown") throw new BrainError("invalid_argument", "only Brain ends a call as unknown");
      const { sequence, late } = await this.#report("finish", { ...this.#call, ...result, cause }) as {
        sequence: number;
        late: boolean;
      };
      return new Finished(sequence, late);
    } finally {
      this.#done();
    }
  }

  /**
   * Asks Brain to call the session's model for this call: the server's provider
   * and credentials, the call's activation budget and identity. The reply comes
   * after the outcome is committed. A lost connection rejects it `connection_lost`
   * while Brain ends the call and its pending request `unknown`; it is never resent.
   */
  async model(request: ModelRequest): Promise<ModelResult> {
    // Checked here too, so a request that is not JSON fails this call instead of the connection.
    const checked = normalizeModelRequest(request) as unknown as JsonValue;
    return await this.#report("model", { ...this.#call, request: checked }) as unknown as ModelResult;
  }

  #report(op: "emit" | "result" | "returned" | "finish" | "model", body: Record<string, unknown>): Promise<JsonValue> {
    // deno-lint-ignore no-explicit-any
    return this.#connection.request(op, body as any, { generation: this.#generation });
  }
}
