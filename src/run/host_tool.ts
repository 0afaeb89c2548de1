import { z } from "zod";
import { type EnvironmentControl, refusedControl } from "../contract/control.ts";
import { BrainError } from "../outcome/errors.ts";
import { issuesJson } from "../outcome/issues.ts";
import { frozenJson, type JsonValue } from "../outcome/json.ts";
import type { ModelRequest } from "../model/types.ts";
import { fail } from "../outcome/outcome.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { errorText } from "../util/error_text.ts";
import { handled } from "../util/handled.ts";
import { raceSignal } from "../util/signal.ts";
import { Finished, type ResultOptions, type ToolContext } from "../contract/context.ts";
import type { CallSink, Invocation, PublishedResult } from "../contract/call.ts";
import { type NormalizedOutput, normalizeOutputNow } from "./output.ts";
import { type SafeParsed, safeParseNow } from "../tool/parse_now.ts";
import { finishContent, refusedEvent, resultContent } from "./report_arguments.ts";
import { toolError } from "./tool_error.ts";
import type { ToolDeclaration } from "../contract/placement.ts";

/**
 * The SDK side of one application Tool call: validates input with `parseAsync`,
 * builds `ctx`, calls `run`, and turns its return, throw and ctx calls into
 * ordered reports to `sink`. Nothing runs for a call that already ended.
 * `grants` carries the Brain-side authority behind `ctx.environments`; without it every operation is refused.
 */
export function runHostTool(
  declaration: ToolDeclaration,
  options: Readonly<Record<string, unknown>>,
  invocation: Invocation,
  sink: CallSink,
  grants: HostGrants = {},
): Promise<void> {
  if (sink.signal.aborted || !declaration.run) return Promise.resolve();
  const input = validInput(declaration, invocation, sink);
  if (input instanceof Promise) {
    return input.then((parsed) => parsed && runParsed(declaration, parsed.value, options, invocation, sink, grants));
  }
  return input ? runParsed(declaration, input.value, options, invocation, sink, grants) : Promise.resolve();
}

function runParsed(
  declaration: ToolDeclaration,
  input: unknown,
  options: Readonly<Record<string, unknown>>,
  invocation: Invocation,
  sink: CallSink,
  grants: HostGrants,
): Promise<void> {
  const reports = new ReportQueue(declaration, sink);
  let returned: unknown;
  try {
    returned = declaration.run!(input, reports.context(invocation, options, grants) as ToolContext<never, never>);
  } catch (error) {
    return reports.fail(error);
  }
  const published = (value: unknown) => isInstance(value, Finished) ? undefined : reports.returned(value);
  try {
    readThen(returned);
  } catch (error) {
    // A Proxy or getter that throws when Brain reads the value: output that cannot be read is invalid_output,
    // the same as a value whose fields throw; a then method that throws rejects like any promise (tool_error).
    return reports.unreadable(error);
  }
  return Promise.resolve(returned).then(published, (error) => reports.fail(error));
}

/** Reads `value.then` the way `Promise.resolve` does, so a throwing read happens here first. */
function readThen(value: unknown): void {
  if (value !== null && (typeof value === "object" || typeof value === "function")) {
    void (value as { then?: unknown }).then;
  }
}

/** A call's input as its schema parsed it, or undefined when the call ended instead. */
type ParsedInput = { value: unknown } | undefined;

/**
 * Validates a call's input with `parseAsync`. On failure it finishes the call
 * with `invalid_input` and resolves undefined; it also resolves undefined when
 * the call ended while validating.
 */
export async function parseInput(
  declaration: ToolDeclaration,
  invocation: Invocation,
  sink: CallSink,
): Promise<ParsedInput> {
  return await validInput(declaration, invocation, sink);
}

/** {@linkcode parseInput}, returning the parsed input itself when nothing in the schema is asynchronous. */
function validInput(
  declaration: ToolDeclaration,
  invocation: Invocation,
  sink: CallSink,
): ParsedInput | Promise<ParsedInput> {
  let parsed;
  try {
    parsed = safeParseNow(declaration.input, invocation.input);
  } catch (error) {
    return refuseInput(sink, `input validation threw: ${errorMessage(error)}`, []);
  }
  return parsed instanceof Promise ? validLater(parsed, sink) : acceptedInput(parsed, sink);
}

/** {@linkcode validInput} once an asynchronous schema settles, unless the call ends first. */
function validLater(parsed: Promise<SafeParsed>, sink: CallSink): Promise<ParsedInput> {
  return raceSignal(parsed, sink.signal).then(
    (parsed) => acceptedInput(parsed, sink),
    (error) =>
      sink.signal.aborted ? undefined : refuseInput(sink, `input validation threw: ${errorMessage(error)}`, []),
  );
}

function acceptedInput(parsed: SafeParsed, sink: CallSink): ParsedInput | Promise<ParsedInput> {
  if (parsed.success) return { value: parsed.data };
  return refuseInput(
    sink,
    `input does not match the schema: ${z.prettifyError(parsed.error)}`,
    issuesJson(parsed.error),
  );
}

async function refuseInput(sink: CallSink, message: string, details: JsonValue): Promise<undefined> {
  await sink.finish({ outcome: fail("invalid_input", message, { details }) }, "error");
  return undefined;
}

/** Brain-side authority a host call's `ctx` exposes beyond its own reports. */
export interface HostGrants {
  /** `ctx.environments`, checked against the binding's `control`. */
  environments?: EnvironmentControl;
}

/** Keeps a call's ctx reports in the order the Tool made them, across async validation. */
class ReportQueue {
  #declaration: ToolDeclaration;
  #sink: CallSink;
  /** The reports still in flight, and the last of them. */
  #inFlight = 0;
  #last: Promise<unknown> | undefined;
  #finishing = false;

  constructor(declaration: ToolDeclaration, sink: CallSink) {
    this.#declaration = declaration;
    this.#sink = sink;
  }

  context(
    invocation: Invocation,
    options: Readonly<Record<string, unknown>>,
    grants: HostGrants,
  ): ToolContext<unknown, unknown> {
    return Object.freeze({
      options,
      sessionId: invocation.sessionId,
      sequence: invocation.sequence,
      deadline: invocation.deadline,
      signal: this.#sink.signal,
      environments: grants.environments ?? refusedControl("no Environment control was granted to this call"),
      emit: (event: string, data: JsonValue = null) => {
        if (this.#finishing) return handled(Promise.reject(this.#finished("ctx.emit")));
        // A sink that commits at once checks the event as it commits it; one queued is checked here, before it waits.
        const emitted = this.#emitNow(event, data);
        if (emitted) return emitted;
        const refused = refusedEvent(event, data);
        if (refused) return handled(Promise.reject(refused));
        const held = this.#held(data);
        return this.#enqueue(() => this.#sink.emit(event, held));
      },
      emitResult: (value: unknown, options?: ResultOptions) => {
        if (this.#finishing) return handled(Promise.reject(this.#finished("ctx.emitResult")));
        const content = resultContent(options);
        if (content instanceof BrainError) return handled(Promise.reject(content));
        const held = this.#held(value);
        return this.#enqueue(() =>
          this.#normalized(held, ({ outcome, invalid }) => {
            if (invalid) {
              const error = outcome.status === "error" ? outcome.error : undefined;
              throw new BrainError("invalid_output", error?.message ?? "invalid output", { details: error?.details });
            }
            return this.#sink.emitResult(withContent({ outcome }, content));
          })
        );
      },
      model: (request: ModelRequest) => {
        if (this.#finishing) return handled(Promise.reject(this.#finished("ctx.model")));
        return handled(this.#sink.model(request));
      },
      finish: (value?: unknown, options?: ResultOptions) => {
        const content = finishContent(value, options);
        if (content instanceof BrainError) return handled(Promise.reject(content));
        this.#finishing = true;
        if (this.#inFlight !== 0 || !this.#sink.finishNow) {
          const held = this.#held(value);
          return this.#enqueue(() => this.#finish(held, content, false));
        }
        // Nothing in flight to order after: a sink whose journal commits at once ends the call before this returns.
        let finished;
        try {
          finished = this.#finish(value, content, true);
        } catch (error) {
          return handled(Promise.reject(error));
        }
        return finished instanceof Promise ? this.#track(finished) : Promise.resolve(finished);
      },
    });
  }

  /** Reports the Tool's finish with `value`, through the sink's `finishNow` when `now`. */
  #finish(value: unknown, content: string | undefined, now: boolean): Finished | Promise<Finished> {
    if (value === undefined || this.#sink.signal.aborted) return this.#end(now);
    return this.#normalized(
      value,
      ({ outcome, invalid, size }) =>
        this.#end(now, withContent({ outcome }, invalid ? undefined : content), invalid, size),
      () => this.#end(now),
    );
  }

  #end(now: boolean, result?: PublishedResult, invalid?: boolean, outcomeSize?: number): Finished | Promise<Finished> {
    const cause = invalid ? "error" : "finish";
    return now ? this.#sink.finishNow!(result, cause, outcomeSize) : this.#sink.finish(result, cause);
  }

  /** Reports what `run` returned: nothing, a result, or a non-success outcome. */
  async returned(returned: unknown): Promise<void> {
    const value = this.#held(returned);
    await this.#enqueue(() => {
      if (value === undefined) return this.#sink.returned();
      return this.#normalized(value, ({ outcome, invalid }): Promise<unknown> => {
        if (outcome.status !== "ok") return this.#sink.finish({ outcome }, invalid ? "error" : "finish");
        return this.#sink.returned({ outcome });
      });
    }).catch(() => {});
  }

  /** Ends the call `invalid_output`: reading what `run` returned threw. */
  async unreadable(error: unknown): Promise<void> {
    this.#finishing = true;
    const outcome = fail("invalid_output", `the returned value cannot be read: ${errorText(error)}`);
    await this.#enqueue(() => this.#sink.finish({ outcome }, "error")).catch(() => {});
  }

  /** Reports a thrown exception as `tool_error`. */
  async fail(error: unknown): Promise<void> {
    this.#finishing = true;
    await this.#enqueue(() => this.#sink.finish(toolError(error), "error")).catch(() => {});
  }

  /**
   * Reports `value` normalized with `report`: at once when nothing in the output
   * schema is asynchronous, else once it is, unless the call ends first. A
   * failure while normalizing rejects, or goes to `ended` when the call ended.
   */
  #normalized<T>(
    value: unknown,
    report: (normalized: NormalizedOutput) => T | Promise<T>,
    ended?: () => T | Promise<T>,
  ): T | Promise<T> {
    let normalized;
    try {
      normalized = normalizeOutputNow(this.#declaration.output, value);
    } catch (error) {
      return ended && this.#sink.signal.aborted ? ended() : Promise.reject(error);
    }
    return normalized instanceof Promise ? this.#normalizedLater(normalized, report, ended) : report(normalized);
  }

  /** {@linkcode #normalized} once an asynchronous output schema settles, unless the call ends first. */
  #normalizedLater<T>(
    normalized: Promise<NormalizedOutput>,
    report: (normalized: NormalizedOutput) => T | Promise<T>,
    ended?: () => T | Promise<T>,
  ): Promise<T> {
    return raceSignal(normalized, this.#sink.signal).then(
      report,
      (error) => ended && this.#sink.signal.aborted ? ended() : Promise.reject(error),
    );
  }

  /**
   * The Event committed at once when no report is in flight and the sink commits
   * before it returns: the queue then has nothing to order. Undefined otherwise.
   */
  #emitNow(event: string, data: JsonValue): Promise<number> | undefined {
    if (this.#inFlight !== 0 || this.#sink.emitNow === undefined) return undefined;
    try {
      const sequence = this.#sink.emitNow(event, data);
      return sequence === undefined ? undefined : Promise.resolve(sequence);
    } catch (error) {
      return handled(Promise.reject(error));
    }
  }

  #finished(operation: string): BrainError {
    return new BrainError(
      "call_finished",
      `${operation} after ctx.finish: the Tool already finished, so nothing more is committed; ` +
        "await every ctx.emit and ctx.emitResult before finishing",
    );
  }

  /**
   * Starts `operation` once every earlier report has settled: at once when none
   * is in flight. The queue watches each report's end, so one the Tool never
   * awaits does not become an unhandled rejection.
   */
  /**
   * `value` as a report that waits for the ones in flight keeps it: a frozen copy
   * when it is JSON, so the record is what the Tool reported, not what its object
   * holds when the report's turn comes.
   */
  #held<T>(value: T): T {
    return this.#inFlight === 0 ? value : (frozenJson(value) as T | undefined) ?? value;
  }

  #enqueue<T>(operation: () => T | Promise<T>): Promise<T> {
    return this.#track(this.#inFlight === 0 ? started(operation) : after(this.#last!, operation));
  }

  /** Counts `result` in flight until it settles, as the last report. */
  #track<T>(result: Promise<T>): Promise<T> {
    this.#inFlight++;
    result.then(this.#landed, this.#landed);
    this.#last = result;
    return result;
  }

  #landed = (): void => {
    this.#inFlight--;
  };
}

/** Starts `operation` once `previous` settles, however it settles. */
function after<T>(previous: Promise<unknown>, operation: () => T | Promise<T>): Promise<T> {
  return previous.then(() => operation(), () => operation());
}

function started<T>(operation: () => T | Promise<T>): Promise<T> {
  try {
    return Promise.resolve(operation());
  } catch (error) {
    return Promise.reject(error);
  }
}

function withContent(result: PublishedResult, content: string | undefined): PublishedResult {
  return content === undefined ? result : { ...result, content };
}

function errorMessage(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
