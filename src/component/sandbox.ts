import type { Dispatch } from "../contract/placement.ts";
import { BrainError, type BrainErrorCode } from "../outcome/errors.ts";
import { TelemetryBudget } from "../contract/budgets.ts";
import { fail, type Outcome } from "../outcome/outcome.ts";
import { CHILD_RUN_FLAGS, denoExecutable } from "./deno_child.ts";
import { encodeFrame, FrameReader } from "./frames.ts";
import { answerHostCall } from "./host_calls.ts";
import type { FromSandbox, SandboxInit, ToSandbox } from "./sandbox_protocol.ts";

/** One diagnostic a Component reported through `telemetry` or its stdout/stderr; it never enters the journal. */
export interface TelemetryEntry {
  /** The placed Tool's name. */
  tool: string;
  /** Sequence of the call's `tool_call_started` record. */
  call: number;
  /** The guest's level, such as `info`; `stdout` or `stderr` for what it printed. */
  level: string;
  /** The guest's message. */
  message: string;
  /**
   * Set only on Brain's own notice that this call's entries are being dropped
   * from here on: `payload_too_large` for an oversize entry, `budget_exceeded`
   * past the rate or the per-call total (`BRAIN_TELEMETRY_LIMITS`).
   */
  code?: BrainErrorCode;
}

/** Everything a sandbox process is started with. */
export interface SandboxSpec {
  /** Sandboxes with the same key run the same Component under the same grant and workspace. */
  key: string;
  /** What the sandbox loads, and the permissions it must hold. */
  init: SandboxInit;
  /** Deno's flags for exactly those permissions. */
  flags: readonly string[];
  /** Its JavaScript heap cap, in MiB. */
  memoryMb: number;
}

const MAIN = new URL("./sandbox_main.ts", import.meta.url).href;
/** How long a guest left blocked in a host call by the call's end has to return before it is killed. */
const GRACE_MS = 100;
/** Ends that the guest itself asked for, through the host call being answered. */
const GUEST_ENDS = new Set(["finish", "emit-result", "returned"]);
const running = new Set<Deno.ChildProcess>();
globalThis.addEventListener("unload", () => {
  for (const child of running) {
    try {
      child.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }
});

/**
 * One sandbox: a child Deno process holding exactly a grant's permissions,
 * running one Component call at a time. Killing it (SIGKILL) is the only way a
 * runaway guest is stopped, and it is certain.
 */
export class Sandbox {
  /** The spec's key. */
  readonly key: string;
  /** The child process id. */
  readonly pid: number;
  /** Resolves once the sandbox has loaded its Component; rejects with a BrainError when it cannot. */
  readonly ready: Promise<void>;
  /** Resolves once the process has exited. */
  readonly exited: Promise<void>;
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #frames: FrameReader;
  #stderr = "";
  #memoryMb: number;
  #dead = false;
  #returning = false;

  /** Starts the process; await {@linkcode Sandbox.ready} before running a call. */
  constructor(spec: SandboxSpec) {
    this.key = spec.key;
    this.#memoryMb = spec.memoryMb;
    this.#child = new Deno.Command(denoExecutable("A Component"), {
      args: [
        ...CHILD_RUN_FLAGS,
        ...spec.flags,
        `--v8-flags=--max-old-space-size=${spec.memoryMb}`,
        MAIN,
      ],
      env: { DENO_NO_UPDATE_CHECK: "1" },
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    running.add(this.#child);
    this.pid = this.#child.pid;
    this.#writer = this.#child.stdin.getWriter();
    this.#frames = new FrameReader(this.#child.stdout);
    void this.#drainStderr();
    this.exited = this.#child.status.then(() => {
      this.#dead = true;
      running.delete(this.#child);
    });
    this.#send(spec.init);
    this.ready = this.#awaitReady();
    this.ready.catch(() => this.kill());
  }

  /** True once the process was killed or exited. */
  get dead(): boolean {
    return this.#dead;
  }

  /** True while the guest that finished its call has yet to return from `run`: the sandbox is free soon. */
  get returning(): boolean {
    return this.#returning && !this.#dead;
  }

  /**
   * Runs one call whose input is already parsed. Resolves true when the sandbox
   * can take another call, false when it was killed (the call's deadline or
   * cancellation while the guest ran, a trap, a crash). Everything the guest
   * reports goes to `dispatch.sink`; the call always ends.
   */
  async run(dispatch: Dispatch, input: unknown, telemetry?: (entry: TelemetryEntry) => void): Promise<boolean> {
    const { sink, invocation, tool } = dispatch;
    const budget = new TelemetryBudget();
    const noticed = new Set<BrainErrorCode>();
    let answering: string | undefined;
    let endedOutside = false;
    let grace: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => {
      // The guest ended its own call (finish) and may still return; any other end kills it now.
      if (answering !== undefined && GUEST_ENDS.has(answering)) return void (this.#returning = true);
      endedOutside = true;
      void this.kill();
    };
    if (sink.signal.aborted) return true;
    sink.signal.addEventListener("abort", onAbort, { once: true });
    this.#send({
      type: "call",
      invocation: {
        tool: invocation.tool,
        deadlineAtMs: invocation.deadline === undefined ? 0 : Math.max(1, Math.floor(invocation.deadline)),
      },
    }, [JSON.stringify(input), JSON.stringify(dispatch.options)]);
    try {
      for (;;) {
        const frame = await this.#frames.next();
        const message = frame?.message as FromSandbox | undefined;
        if (frame === undefined || message === undefined) {
          const outcome = await this.#exitOutcome();
          const cause = outcome.status === "unknown" ? "unknown" : "error";
          if (!sink.signal.aborted) await sink.finish({ outcome }, cause).catch(() => {});
          return false;
        }
        if (message.type === "host") {
          answering = message.op;
          const reply = await answerHostCall({ op: message.op, args: frame.texts }, sink, tool.output);
          answering = undefined;
          if (this.#dead) return false;
          if (reply.tag === "ok" && typeof reply.val === "string") {
            this.#send({ type: "reply", reply: { tag: "ok" } }, [reply.val]);
          } else this.#send({ type: "reply", reply });
          if (sink.signal.aborted) grace ??= setTimeout(() => void this.kill(), GRACE_MS);
        } else if (message.type === "telemetry") {
          if (sink.signal.aborted) continue;
          const refused = budget.admit(message.level, message.message);
          if (refused && noticed.has(refused.code)) continue;
          if (refused) noticed.add(refused.code);
          try {
            telemetry?.({
              tool: invocation.tool,
              call: invocation.sequence,
              ...(refused
                ? { level: "error", message: refused.message, code: refused.code }
                : { level: message.level, message: message.message }),
            });
          } catch {
            // Telemetry is best-effort: a failing listener never affects the call.
          }
        } else if (message.type === "done") {
          if (!sink.signal.aborted) {
            const text = message.error ?? "the Component's run returned without calling finish";
            const outcome = message.exhausted
              ? fail("resource_exhausted", `${text} (the guest reached its memory cap of ${this.#memoryMb} MiB)`)
              : fail("tool_error", text);
            await sink.finish({ outcome }, "error").catch(() => {});
          }
          return !this.#dead && !message.trapped && !endedOutside;
        }
      }
    } finally {
      this.#returning = false;
      sink.signal.removeEventListener("abort", onAbort);
      clearTimeout(grace);
    }
  }

  /** Kills the process (SIGKILL) and resolves once it is gone. */
  async kill(): Promise<void> {
    if (!this.#dead) {
      this.#dead = true;
      try {
        this.#child.kill("SIGKILL");
      } catch {
        // It already exited.
      }
      void this.#frames.cancel();
      void this.#writer.close().catch(() => {});
    }
    await this.#child.status;
  }

  async #awaitReady(): Promise<void> {
    const message = (await this.#frames.next())?.message as FromSandbox | undefined;
    if (message?.type === "ready") return;
    if (message?.type === "failed") {
      throw new BrainError(message.exhausted ? "resource_exhausted" : "unsupported_runtime", message.message);
    }
    const outcome = await this.#exitOutcome();
    const error = outcome.status === "error"
      ? outcome.error
      : { code: "unsupported_runtime", message: outcome.status === "unknown" ? outcome.message ?? "" : "" };
    throw new BrainError(
      error.code === "resource_exhausted" ? "resource_exhausted" : "unsupported_runtime",
      error.message,
    );
  }

  /**
   * How the process ending is reported: memory exhaustion; a kill by a signal Brain did not send, after which no one
   * knows what the guest did (`unknown`, as any connection lost after dispatch); or its own exit, with the end of its
   * stderr.
   */
  async #exitOutcome(): Promise<Outcome> {
    this.#dead = true;
    const status = await this.#child.status;
    if (/out of memory|heap limit/i.test(this.#stderr)) {
      return fail("resource_exhausted", `the Component's sandbox ran out of memory (cap ${this.#memoryMb} MiB)`);
    }
    const stderr = this.#stderr.trim().slice(-1000);
    if (status.signal) {
      return { status: "unknown", message: `the Component's sandbox was killed (signal ${status.signal}): ${stderr}` };
    }
    return fail("tool_error", `the Component's sandbox exited (code ${status.code}): ${stderr}`);
  }

  #send(message: ToSandbox, texts?: string[]): void {
    this.#writer.write(encodeFrame(message, texts)).catch(() => {});
  }

  async #drainStderr(): Promise<void> {
    const decoder = new TextDecoder();
    try {
      for await (const chunk of this.#child.stderr) {
        this.#stderr = (this.#stderr + decoder.decode(chunk, { stream: true })).slice(-8192);
      }
    } catch {
      // The process is gone.
    }
  }
}
