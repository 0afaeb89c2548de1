import { CHILD_RUN_FLAGS, denoExecutable } from "./deno_child.ts";

const MAIN = new URL("./reaper_main.ts", import.meta.url).href;
const encoder = new TextEncoder();

/**
 * Brain's side of the reaper process: it learns each sandbox's pid, and kills
 * those still alive if this process dies first. Closing it ends the reaper.
 */
export class Reaper {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;

  constructor() {
    this.#child = new Deno.Command(denoExecutable("A Component"), {
      args: [...CHILD_RUN_FLAGS, "--allow-run", MAIN],
      env: { DENO_NO_UPDATE_CHECK: "1" },
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    this.#writer = this.#child.stdin.getWriter();
  }

  /** Lists `pid` for killing should this process die. */
  watch(pid: number): void {
    this.#writer.write(encoder.encode(`+${pid}\n`)).catch(() => {});
  }

  /** Unlists `pid`: it exited. */
  forget(pid: number): void {
    this.#writer.write(encoder.encode(`-${pid}\n`)).catch(() => {});
  }

  /** Ends the reaper (it kills whatever is still listed) and waits for it. */
  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#child.status;
  }
}
