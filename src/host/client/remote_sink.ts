import { normalizeModelRequest } from "../../model/request.ts";
import type { ModelRequest, ModelResult } from "../../model/types.ts";
import { BrainError } from "../../outcome/errors.ts";
import { frozenJson, type JsonValue } from "../../outcome/json.ts";
import { Finished } from "../../contract/context.ts";
import { type CallSink, endedCause, endedReason, type PublishedResult } from "../../contract/call.ts";
import type { JournalRecord, RecordBody, TerminalCause } from "../../journal/records.ts";
import type { Replies, RequestFrame, RequestOf } from "../protocol.ts";

/** The reports a host makes about a call Brain dispatched to it. */
export type ReportOp = "emit" | "result" | "returned" | "finish" | "model" | "record";

/** Sends one report of this call to Brain (its id is set on sending) and resolves with its acknowledgement. */
export type Report = <O extends ReportOp>(frame: RequestFrame<O>) => Promise<Replies[O]>;

/**
 * The SDK's `CallSink` for a call Brain dispatched over the host connection:
 * each report goes through `report`, resolved by Brain's acknowledgement once it
 * is committed. A report that ends the call (a finish, a failed result) aborts
 * `signal` here with the cause Brain committed; an end Brain decided arrives as
 * an `abort` frame and aborts it with the same reason as an embedded call's.
 */
export class RemoteSink implements CallSink {
  #controller: AbortController;
  #session: string;
  #call: number;
  #report: Report;
  #done: () => void;

  constructor(parts: {
    report: Report;
    session: string;
    call: number;
    controller: AbortController;
    done: () => void;
  }) {
    this.#controller = parts.controller;
    this.#report = parts.report;
    this.#session = parts.session;
    this.#call = parts.call;
    this.#done = parts.done;
  }

  /** Aborted when the call ends or the connection is lost. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Commits an extension Event; resolves with its sequence. */
  emit(event: string, data: JsonValue): Promise<number> {
    return this.#reported({ id: 0, op: "emit", session: this.#session, call: this.#call, event, data });
  }

  /** Commits a result; resolves with its sequence. A failed outcome ends the call. */
  async emitResult({ outcome, content }: PublishedResult): Promise<number> {
    const frame: RequestFrame<"result"> = { id: 0, op: "result", session: this.#session, call: this.#call, outcome };
    if (content !== undefined) frame.content = content;
    const sequence = await this.#reported(frame);
    if (outcome.status !== "ok") this.#ended("finish");
    return sequence;
  }

  /** Ends the synchronous phase; a failed outcome ends the call. */
  async returned(result?: PublishedResult): Promise<void> {
    const frame: RequestFrame<"returned"> = { id: 0, op: "returned", session: this.#session, call: this.#call };
    await this.#report(published(frame, result));
    if (result && result.outcome.status !== "ok") this.#ended("finish");
  }

  /**
   * Ends the call; `unknown` when an Environment this host runs lost its connection
   * after sending the call, so no one knows whether it did its work.
   */
  finish(
    result: PublishedResult | undefined,
    cause: "finish" | "error" | "unknown" = "finish",
  ): Promise<Finished> {
    let reported: Promise<Replies["finish"]>;
    try {
      const frame: RequestFrame<"finish"> = { id: 0, op: "finish", session: this.#session, call: this.#call, cause };
      reported = this.#report(published(frame, result));
    } catch (error) {
      this.#done();
      return Promise.reject(error);
    }
    return reported.then(({ sequence, late }) => {
      this.#ended(cause);
      this.#done();
      return new Finished(sequence, late);
    }, (error) => {
      this.#done();
      throw error;
    });
  }

  /**
   * Asks Brain to call the session's model for this call: the server's provider
   * and credentials, the call's activation budget and identity. The reply comes
   * after the outcome is committed. A lost connection rejects it `connection_lost`
   * while Brain ends the call and its pending request `unknown`; it is never resent.
   */
  async model(request: ModelRequest): Promise<ModelResult> {
    // Checked here too, so a request that is not JSON fails this call instead of the connection;
    // async, so a bad request rejects ctx.model as it does embedded instead of throwing.
    const normalized = normalizeModelRequest(request);
    const reply = await this.#reported({
      id: 0,
      op: "model",
      session: this.#session,
      call: this.#call,
      request: normalized,
    });
    // Frozen, as the embedded response is: it is the committed record's.
    return frozenJson(reply) as unknown as ModelResult;
  }

  /** Commits the Environment changes `ctx.environments` made, with the call's other reports. */
  async record(bodies: RecordBody[]): Promise<JournalRecord[]> {
    const records = bodies.filter(isEnvironmentChange);
    if (records.length !== bodies.length) {
      throw new BrainError("invalid_argument", "a host records only Environment changes");
    }
    return await this.#reported({ id: 0, op: "record", session: this.#session, call: this.#call, records });
  }

  /**
   * `report`, refused as an embedded call refuses a report after its end (`call_finished`) when Brain ended the
   * call before this client closed, rather than with the closed client's `brain_closed`.
   */
  async #reported<O extends ReportOp>(frame: RequestFrame<O>): Promise<Replies[O]> {
    try {
      return await this.#report(frame);
    } catch (error) {
      const cause = endedCause(this.#controller.signal.reason);
      if (!(error instanceof BrainError && error.code === "brain_closed") || cause === undefined) throw error;
      throw new BrainError("call_finished", `call ${this.#call} has ended (${cause})`, { cause: error });
    }
  }

  /** The call ended by this host's own report; an earlier end Brain decided already aborted it. */
  #ended(cause: TerminalCause): void {
    if (!this.#controller.signal.aborted) this.#controller.abort(endedReason(cause));
  }
}

/** `frame` carrying `result`'s outcome and content, when there is a result. */
function published<F extends { outcome?: PublishedResult["outcome"]; content?: string }>(
  frame: F,
  result: PublishedResult | undefined,
): F {
  if (result === undefined) return frame;
  frame.outcome = result.outcome;
  if (result.content !== undefined) frame.content = result.content;
  return frame;
}

type EnvironmentChange = RequestOf<"record">["records"][number];

function isEnvironmentChange(body: RecordBody): body is EnvironmentChange {
  return body.kind === "environment_created" || body.kind === "environment_updated" ||
    body.kind === "environment_deleted" || body.kind === "environment_setup";
}
