import { shownValue } from "../util/shown_value.ts";
import { allKeys, readOptions } from "../outcome/known_keys.ts";
import { checkToken } from "../util/tokens.ts";
import { readBounded } from "../util/read_bounded.ts";
import { environmentOptions } from "../env/host_env.ts";
import type { Environment } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { jsonOptions } from "../outcome/json_options.ts";
import { fail, type Outcome, parseEnvelope } from "../outcome/outcome.ts";
import type { Dispatch } from "../contract/placement.ts";
import { type CallSink, endedCause, type PublishedResult } from "../contract/call.ts";
import type { TerminalCause } from "../journal/records.ts";
import { lines } from "../util/lines.ts";
import { fetchNeverSent, fetchOnce } from "../util/fetch_once.ts";
import {
  EXTENSION_ROUTES,
  type ExtensionAck,
  type ExtensionEnded,
  type ExtensionReport,
  optionsNotJson,
} from "./protocol.ts";

/** How long Brain waits for an extension to end its response after the call's last report. */
const DRAIN_MS = 1_000;
/** How long Brain waits to tell an extension why it ended a call before cutting the request. */
const NOTICE_MS = 1_000;
/** The causes Brain decides itself, rather than a report of the Tool's. */
const BRAIN_ENDED: readonly (TerminalCause | undefined)[] = ["timeout", "cancelled", "unknown"];

/** Options of {@linkcode extensionEnv}. */
export interface ExtensionEnvOptions {
  /** Binding name. */
  name: string;
  /** Base URL the {@linkcode toolExtension} app is served at. */
  url: string | URL;
  /** Bearer token the extension requires, if any. */
  token?: string;
  /**
   * Bytes of one report line Brain reads from the extension; a longer line ends the call
   * with `payload_too_large`. {@linkcode EXTENSION_MAX_REPORT_BYTES} by default.
   */
  maxReportBytes?: number;
}

/** The default longest report line, 8 MiB: a result up to the default emitted-bytes budget, with room to spare. */
export const EXTENSION_MAX_REPORT_BYTES = 8 * 1024 * 1024;

/**
 * Brain's side of an Application tool extension: host Tools placed in this
 * binding run in the extension's HTTP handler instead of this process. Brain
 * commits the intent, POSTs the call once, commits each streamed report in
 * order and only then acknowledges it, so the extension's `ctx.finish` resolves
 * once the finish is durable. A response that ends without a finish ends the call
 * `unknown`; a request past the extension's lifetime ends it with `lifetime_exceeded`,
 * one the call's own deadline bounded ends `timeout` at that deadline. The placement's
 * options go with each call: the extension runs its Tool with the options it was configured
 * with, and refuses a call whose placement names other ones (`invalid_options`). The URL's host is
 * a network grant checked against the Brain's allow-list. The binding grants no
 * Environment control.
 *
 * @example
 * ```ts
 * import { extensionEnv } from "@aexhq/brain/extension";
 * import { tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const app = extensionEnv({ name: "app-http", url: "https://app.example.com/brain/" });
 * const lookup = tool({
 *   name: "lookup",
 *   description: "Look up one record.",
 *   input: z.object({ id: z.string() }),
 *   run: ({ id }, ctx) => ctx.finish({ id }),
 * });
 * console.log(lookup({ env: app }).advertised.env); // "app-http"
 * ```
 */
export function extensionEnv(given: ExtensionEnvOptions): Environment {
  const options = readOptions(
    "extensionEnv options",
    given,
    allKeys<ExtensionEnvOptions>({ name: true, url: true, token: true, maxReportBytes: true }),
  );
  const { name } = environmentOptions({ name: options.name });
  const maxReportBytes = options.maxReportBytes ?? EXTENSION_MAX_REPORT_BYTES;
  if (!Number.isSafeInteger(maxReportBytes) || maxReportBytes <= 0) {
    throw new BrainError("invalid_argument", `environment ${name}: maxReportBytes must be a positive integer`);
  }
  let base: URL;
  try {
    base = new URL(options.url);
  } catch {
    throw new BrainError("invalid_argument", `environment ${name}: ${shownValue(options.url)} is not a URL`);
  }
  if ((base.protocol !== "http:" && base.protocol !== "https:") || base.username || base.password) {
    throw new BrainError(
      "invalid_argument",
      `environment ${name}: ${base.origin} is not an http(s) URL without credentials`,
    );
  }
  if (options.token !== undefined) checkToken(`environment ${name}: token`, options.token);
  if (!base.pathname.endsWith("/")) base.pathname += "/";
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  const calls = new URL(EXTENSION_ROUTES.calls, base);
  const acks = new URL(EXTENSION_ROUTES.acks, base);

  const dispatch = async ({ invocation, options, sink }: Dispatch): Promise<void> => {
    // The extension compares the placement's options with the ones its Tool runs with: they travel as JSON.
    const travelling = jsonOptions(options);
    if ("nonJson" in travelling) {
      await sink.finish(
        { outcome: fail("invalid_options", optionsNotJson(invocation.tool, travelling.nonJson)) },
        "error",
      );
      return;
    }
    // The request outlives the call's signal by one report: a report being committed
    // (a finish, or an error result that ends the call) still gets its ack.
    const request = new AbortController();
    let acknowledging = false;
    let ending = false;
    // Brain ended the call itself: tell the extension why (bounded), then cut the request.
    const endRequest = async () => {
      if (ending) return;
      ending = true;
      const ended = endedCause(sink.signal.reason);
      if (ended === "timeout" || ended === "cancelled" || ended === "unknown") {
        const notice: ExtensionEnded = { sessionId: invocation.sessionId, call: invocation.sequence, ended };
        await fetchOnce(acks, {
          method: "POST",
          headers,
          body: JSON.stringify(notice),
          signal: AbortSignal.timeout(NOTICE_MS),
        }).then((answer) => answer.body?.cancel(), () => {});
      }
      request.abort(sink.signal.reason);
    };
    sink.signal.addEventListener("abort", () => acknowledging || void endRequest(), { once: true });
    // This dispatch lost the request itself: the call ends unknown with no notice, since the call was sent once and
    // anything more sent to the extension about it would be a second request.
    const reportLost = (message: string) => {
      ending = true;
      return lost(sink, message);
    };
    let response: Response;
    try {
      response = await fetchOnce(calls, {
        method: "POST",
        headers,
        body: JSON.stringify({ ...invocation, options: travelling.json }),
        signal: request.signal,
      });
    } catch (error) {
      if (sink.signal.aborted) return;
      // Never sent (refused, DNS, no permission): a known failure. Otherwise the extension may have run it.
      if (fetchNeverSent(error)) {
        const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error);
        await sink.finish({
          outcome: fail("connection_failed", `the extension could not be reached: ${cause}`, { retryable: true }),
        }, "error");
        return;
      }
      return reportLost(`the extension request failed: ${(error as Error).message}`);
    }
    if (!response.ok || !response.body) {
      await sink.finish({ outcome: await refusal(response) }, "error");
      return;
    }
    const acknowledge = (ack: Omit<ExtensionAck, "sessionId" | "call">) =>
      fetchOnce(acks, {
        method: "POST",
        headers,
        body: JSON.stringify({ sessionId: invocation.sessionId, call: invocation.sequence, ...ack }),
      }).then((answer) => answer.body?.cancel(), () => request.abort());
    let settled = false;
    let drain: ReturnType<typeof setTimeout> | undefined;
    try {
      for await (const line of lines(response.body, maxReportBytes)) {
        if (line.trim() === "") continue;
        const report = reportOf(line);
        if (!report) {
          // A line that is no report: the extension broke the protocol, and nothing may stay open.
          await sink.finish(
            { outcome: fail("protocol_error", "the extension sent a line that is not a report") },
            "error",
          );
          return;
        }
        if (report.type === "expired") {
          // The call's own deadline bounded the request: Brain's deadline ends it timeout, whichever clock ran first.
          if (report.cause === "timeout" && invocation.deadline !== undefined) return await aborted(sink.signal);
          await sink.finish({ outcome: fail("lifetime_exceeded", report.message) }, "error");
          return;
        }
        acknowledging = true;
        let ack: Omit<ExtensionAck, "sessionId" | "call">;
        try {
          ack = { report: report.id, ...await commit(sink, report) };
        } catch (error) {
          const { code, message } = error instanceof BrainError
            ? error
            : { code: "protocol_error", message: String(error) };
          ack = { report: report.id, error: { code, message } };
        }
        await acknowledge(ack);
        acknowledging = false;
        // Brain ended the call while this report was acknowledged: end the request now, as it would have then.
        if (sink.signal.aborted && BRAIN_ENDED.includes(endedCause(sink.signal.reason))) return await endRequest();
        // A refused finish still ends the call: the extension broke the protocol, and nothing may stay open.
        if (report.type === "finish" && ack.error && !sink.signal.aborted) {
          await sink.finish({
            outcome: fail("protocol_error", `the extension's finish was refused: ${ack.error.message}`),
          }, "error");
        }
        // Past the late-report budget nothing more is recorded: stop reading.
        if (settled && ack.error?.code === "budget_exceeded") return;
        // Once the call has ended, read on (later reports are recorded late) until the extension
        // ends the response; a response that lingers is cut off.
        if (!settled && (report.type === "finish" || sink.signal.aborted)) {
          settled = true;
          drain = setTimeout(() => request.abort(), DRAIN_MS);
        }
      }
    } catch (error) {
      if (settled || sink.signal.aborted) return;
      if (error instanceof BrainError && error.code === "payload_too_large") {
        await sink.finish({ outcome: fail(error.code, `the extension sent a report line ${error.message}`) }, "error");
        return;
      }
      return reportLost(`the extension response broke: ${(error as Error).message}`);
    } finally {
      clearTimeout(drain);
      request.abort();
    }
    if (settled) return;
    await reportLost("the extension response ended before the Tool finished");
  };

  return Object.freeze({
    name,
    kind: "extension",
    grant: Object.freeze({ net: Object.freeze([base.host]) as string[] }),
    control: Object.freeze([]),
    describe: (): JsonValue => ({ kind: "extension", name, url: base.href }),
    dispatch: (call: Dispatch) => void dispatch(call).catch(() => {}),
  });
}

/** Commits one report through `sink`; resolves with what the ack carries. */
async function commit(sink: CallSink, report: Exclude<ExtensionReport, { type: "expired" }>) {
  const result = published(report);
  switch (report.type) {
    case "result":
      return { sequence: await sink.emitResult(result!) };
    case "returned":
      await sink.returned(result);
      return {};
    case "finish": {
      const finished = await sink.finish(result, report.cause === "error" ? "error" : "finish");
      return { sequence: finished.sequence, late: finished.late };
    }
    default:
      throw new BrainError("protocol_error", `unknown extension report ${(report as { type: string }).type}`);
  }
}

function published(report: { outcome?: PublishedResult["outcome"]; content?: string }): PublishedResult | undefined {
  if (report.outcome === undefined) {
    if (report.content === undefined) return undefined;
    throw new BrainError("protocol_error", "the extension reported content without the result it represents");
  }
  const parsed = parseEnvelope(report.outcome);
  if ("malformed" in parsed || (report.content !== undefined && typeof report.content !== "string")) {
    throw new BrainError("protocol_error", "the extension reported a malformed outcome");
  }
  return report.content === undefined
    ? { outcome: report.outcome }
    : { outcome: report.outcome, content: report.content };
}

/** Resolves once `signal` has aborted. */
function aborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener("abort", () => resolve(), { once: true }));
}

/** The most bytes of a refusal (a non-2xx answer) Brain reads. */
const MAX_REFUSAL_BYTES = 64 * 1024;

/**
 * The outcome of an extension's refusal: its `{ error: { code, message } }` when that is a well-formed
 * error, else `protocol_error` naming the status. At most {@linkcode MAX_REFUSAL_BYTES} of it are read.
 */
async function refusal(response: Response): Promise<Outcome> {
  try {
    const { error } = JSON.parse(await readBounded(response.body, "the extension's refusal", MAX_REFUSAL_BYTES));
    return fail(error.code, error.message);
  } catch {
    return fail("protocol_error", `the extension answered ${response.status}`);
  }
}

/** The report a response line carries, or undefined when it is not JSON or not a report object. */
function reportOf(line: string): ExtensionReport | undefined {
  let report: unknown;
  try {
    report = JSON.parse(line);
  } catch {
    return undefined;
  }
  const type = (report as { type?: unknown } | null)?.type;
  return typeof report === "object" && !Array.isArray(report) && typeof type === "string"
    ? report as ExtensionReport
    : undefined;
}

async function lost(sink: CallSink, message: string): Promise<void> {
  if (sink.signal.aborted) return;
  await sink.finish({ outcome: { status: "unknown", message } }, "unknown");
}
