// @ts-types="@modelcontextprotocol/sdk/shared/transport"
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
// @ts-types="@modelcontextprotocol/sdk/types"
import { type JSONRPCMessage, JSONRPCMessageSchema } from "@modelcontextprotocol/sdk/types.js";
import { lines } from "../util/lines.ts";

/** How long a closing server may take to exit after its stdin closes, before it is killed. */
const EXIT_GRACE_MS = 1_000;
/** The longest line (one JSON-RPC message) read from a server, in bytes: 64 MiB. */
const MAX_LINE_BYTES = 64 * 1024 * 1024;
/** How much of the server's stderr is kept to explain a failed start. */
const STDERR_TAIL = 2_048;

/** How to start a stdio MCP server: exactly this program, arguments, variables and working directory. */
export interface StdioCommand {
  /** The program. */
  command: string;
  /** Its arguments. */
  args: readonly string[];
  /** Its whole environment: nothing else is inherited. */
  env: Record<string, string>;
  /** Its working directory, or the Brain's own when undefined. */
  cwd: string | undefined;
}

/**
 * An MCP client transport over a child process's stdin and stdout (one JSON-RPC
 * message a line), started with `Deno.Command` and a cleared environment. Closing
 * ends stdin, waits briefly for the exit, then kills the process; `onclose` runs
 * once, when the process has exited.
 */
export class StdioTransport implements Transport {
  /** Set by the SDK's Protocol. */
  onclose?: () => void;
  /** Set by the SDK's Protocol. */
  onerror?: (error: Error) => void;
  /** Set by the SDK's Protocol. */
  onmessage?: (message: JSONRPCMessage) => void;
  #command: StdioCommand;
  #child: Deno.ChildProcess | undefined;
  #stdin: WritableStreamDefaultWriter<Uint8Array> | undefined;
  #stderr = "";
  #exited: Promise<void> | undefined;
  #encoder = new TextEncoder();

  constructor(command: StdioCommand) {
    this.#command = command;
  }

  /** The last lines the server wrote to stderr. */
  get stderr(): string {
    return this.#stderr;
  }

  start(): Promise<void> {
    const { command, args, env, cwd } = this.#command;
    const child = this.#child = new Deno.Command(command, {
      args: [...args],
      env,
      clearEnv: true,
      cwd,
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    this.#stdin = child.stdin.getWriter();
    const reading = Promise.all([this.#read(child.stdout), this.#keepStderr(child.stderr)]);
    this.#exited = Promise.all([child.status, reading]).then(() => this.onclose?.(), () => this.onclose?.());
    return Promise.resolve();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    if (!this.#stdin) throw new Error("the MCP server process is not running");
    await this.#stdin.write(this.#encoder.encode(JSON.stringify(message) + "\n"));
  }

  async close(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    await this.#stdin?.close().catch(() => {});
    const timer = setTimeout(() => {
      try {
        child.kill("SIGKILL");
      } catch {
        // It exited meanwhile.
      }
    }, EXIT_GRACE_MS);
    await this.#exited;
    clearTimeout(timer);
  }

  /** Kills the server at once, as a crash would. */
  kill(): void {
    try {
      this.#child?.kill("SIGKILL");
    } catch {
      // Already gone.
    }
  }

  async #read(stdout: ReadableStream<Uint8Array>): Promise<void> {
    try {
      for await (const line of lines(stdout, MAX_LINE_BYTES)) this.#deliver(line);
    } catch (error) {
      this.onerror?.(error as Error);
      // A line past the bound leaves no message boundary to resume at: the server is stopped, its calls end unknown.
      this.kill();
    }
  }

  #deliver(line: string): void {
    if (line.trim() === "") return;
    let message: JSONRPCMessage;
    try {
      message = JSONRPCMessageSchema.parse(JSON.parse(line));
    } catch (error) {
      this.onerror?.(new Error(`the MCP server wrote a line that is not JSON-RPC: ${(error as Error).message}`));
      return;
    }
    this.onmessage?.(message);
  }

  async #keepStderr(stderr: ReadableStream<Uint8Array>): Promise<void> {
    try {
      for await (const chunk of stderr.pipeThrough(new TextDecoderStream())) {
        this.#stderr = (this.#stderr + chunk).slice(-STDERR_TAIL);
      }
    } catch {
      // The tail is diagnostics only.
    }
  }
}
