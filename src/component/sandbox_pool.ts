import type { ComponentSettings } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import { errorText } from "../util/error_text.ts";
import { Reaper } from "./reaper.ts";
import { Sandbox, type SandboxSpec } from "./sandbox.ts";

/** The sandbox limits a Brain uses when its settings leave them out. */
export const SANDBOX_DEFAULTS: Readonly<SandboxLimits> = Object.freeze({
  memoryMb: 256,
  maxSandboxes: 8,
  maxQueuedCalls: 1000,
  warm: 1,
});

/** The sandbox limits in force in one Brain. */
export interface SandboxLimits {
  /** Guest memory and JavaScript heap cap of one sandbox, in MiB. */
  memoryMb: number;
  /** Most sandbox processes alive at once. */
  maxSandboxes: number;
  /** Most calls waiting for a sandbox. */
  maxQueuedCalls: number;
  /** Ready sandboxes kept per held key. */
  warm: number;
}

interface Waiter {
  spec: SandboxSpec;
  resolve: (sandbox: Sandbox) => void;
  reject: (error: unknown) => void;
}

/**
 * A Brain's Component sandboxes: ready ones kept per key (Component, grant and
 * workspace), at most `maxSandboxes` processes alive at once, calls beyond
 * that waiting in order. A key lives while an admitted session holds it.
 */
export class SandboxPools implements AsyncDisposable {
  /** The limits in force. */
  readonly limits: Readonly<SandboxLimits>;
  /** Absolute path of the transpiled-Component cache. */
  readonly cacheDir: string;
  #idle: Sandbox[] = [];
  #live = new Set<Sandbox>();
  #waiting: Waiter[] = [];
  #holders = new Map<string, number>();
  #specs = new Map<string, SandboxSpec>();
  #warming = new Map<string, number>();
  #closed = false;
  #reaper: Reaper | undefined;

  constructor(settings: Readonly<ComponentSettings> = {}) {
    this.limits = Object.freeze({
      memoryMb: settings.memoryMb ?? SANDBOX_DEFAULTS.memoryMb,
      maxSandboxes: settings.maxSandboxes ?? SANDBOX_DEFAULTS.maxSandboxes,
      maxQueuedCalls: settings.maxQueuedCalls ?? SANDBOX_DEFAULTS.maxQueuedCalls,
      warm: settings.warm ?? SANDBOX_DEFAULTS.warm,
    });
    const cacheDir = settings.cacheDir ?? ".brain/components";
    this.cacheDir = cacheDir.startsWith("/") ? cacheDir : `${Deno.cwd()}/${cacheDir}`;
  }

  /** Process ids of every sandbox alive, for diagnostics. */
  get pids(): number[] {
    return [...this.#live].map((sandbox) => sandbox.pid);
  }

  /** Marks `spec.key` as held by one more session and starts its warm sandboxes. Returns the release. */
  hold(spec: SandboxSpec): () => void {
    this.#holders.set(spec.key, (this.#holders.get(spec.key) ?? 0) + 1);
    this.#specs.set(spec.key, spec);
    this.#warm(spec.key);
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const left = (this.#holders.get(spec.key) ?? 1) - 1;
      if (left > 0) return void this.#holders.set(spec.key, left);
      this.#holders.delete(spec.key);
      this.#specs.delete(spec.key);
      for (const sandbox of this.#idle.filter((idle) => idle.key === spec.key)) this.#retire(sandbox);
    };
  }

  /**
   * A ready sandbox for `spec`: an idle one, a new one, or the next one freed.
   * Rejects with `resource_exhausted` when too many calls already wait, and
   * with `signal.reason` when the call ends while waiting.
   */
  acquire(spec: SandboxSpec, signal: AbortSignal): Promise<Sandbox> {
    if (this.#closed) return Promise.reject(new BrainError("session_closed", "this Brain is closed"));
    const idle = this.#idle.findIndex((sandbox) => sandbox.key === spec.key);
    if (idle >= 0) return Promise.resolve(this.#idle.splice(idle, 1)[0]);
    if (this.#soonFree(spec.key) > this.#waiting.filter((waiter) => waiter.spec.key === spec.key).length) {
      return this.#wait(spec, signal);
    }
    if (this.#live.size >= this.limits.maxSandboxes && this.#idle.length > 0) this.#retire(this.#idle[0]);
    if (this.#live.size < this.limits.maxSandboxes) return this.#start(spec);
    if (this.#waiting.length >= this.limits.maxQueuedCalls) {
      return Promise.reject(
        new BrainError(
          "resource_exhausted",
          `${this.limits.maxSandboxes} Component sandboxes are busy and ${this.#waiting.length} calls wait for one`,
          { details: { maxSandboxes: this.limits.maxSandboxes, maxQueuedCalls: this.limits.maxQueuedCalls } },
        ),
      );
    }
    return this.#wait(spec, signal);
  }

  #wait(spec: SandboxSpec, signal: AbortSignal): Promise<Sandbox> {
    return new Promise((resolve, reject) => {
      const waiter: Waiter = { spec, resolve, reject };
      this.#waiting.push(waiter);
      signal.addEventListener("abort", () => {
        const at = this.#waiting.indexOf(waiter);
        if (at < 0) return;
        this.#waiting.splice(at, 1);
        reject(signal.reason);
      }, { once: true });
    });
  }

  /** Takes a sandbox back after a call: kept for its key when `reusable`, else killed and replaced. */
  release(sandbox: Sandbox, reusable: boolean): void {
    if (!reusable || sandbox.dead || this.#closed || !this.#holders.has(sandbox.key)) {
      this.#retire(sandbox);
      this.#warm(sandbox.key);
      return;
    }
    const same = this.#waiting.findIndex((waiter) => waiter.spec.key === sandbox.key);
    if (same >= 0) return this.#waiting.splice(same, 1)[0].resolve(sandbox);
    if (this.#waiting.length > 0) return this.#retire(sandbox);
    this.#idle.push(sandbox);
  }

  /** Kills every sandbox and refuses every waiting call. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.#closed = true;
    for (const waiter of this.#waiting.splice(0)) waiter.reject(new BrainError("session_closed", "this Brain closed"));
    this.#idle = [];
    await Promise.all([...this.#live].map((sandbox) => sandbox.kill()));
    await this.#reaper?.close();
  }

  /** Sandboxes of `key` that are starting, or whose guest finished its call and is returning. */
  #soonFree(key: string): number {
    let count = this.#warming.get(key) ?? 0;
    for (const sandbox of this.#live) if (sandbox.key === key && sandbox.returning) count++;
    return count;
  }

  /** A new sandbox for `spec`; rejects `resource_exhausted`, changing nothing, when the system refuses the process. */
  #start(spec: SandboxSpec): Promise<Sandbox> {
    let sandbox: Sandbox;
    try {
      sandbox = new Sandbox(spec);
    } catch (error) {
      // Out of file descriptors or processes for a moment: this call fails, and the pool is as it was.
      return Promise.reject(
        new BrainError("resource_exhausted", `cannot start a Component sandbox: ${errorText(error)}`, { cause: error }),
      );
    }
    const reaper = this.#reaper ??= new Reaper();
    reaper.watch(sandbox.pid);
    void sandbox.exited.then(() => {
      reaper.forget(sandbox.pid);
      // Killed while idle, from outside (the OS out of memory, an operator): no call may be handed it; a fresh one
      // takes its place.
      if (!this.#idle.includes(sandbox)) return;
      this.#retire(sandbox);
      this.#warm(sandbox.key);
    });
    this.#live.add(sandbox);
    return sandbox.ready.then(() => sandbox, (error) => {
      this.#forget(sandbox);
      throw error;
    });
  }

  /** Kills `sandbox` and gives its place to the first waiting call, or to a warm replacement. */
  #retire(sandbox: Sandbox): void {
    const at = this.#idle.indexOf(sandbox);
    if (at >= 0) this.#idle.splice(at, 1);
    void sandbox.kill();
    this.#forget(sandbox);
  }

  #forget(sandbox: Sandbox): void {
    if (!this.#live.delete(sandbox) || this.#closed) return;
    const next = this.#waiting.shift();
    if (next) this.#start(next.spec).then(next.resolve, next.reject);
  }

  /** Starts sandboxes for a held key until `warm` are ready or starting, within the cap. */
  #warm(key: string): void {
    const spec = this.#specs.get(key);
    if (!spec || this.#closed) return;
    const ready = this.#idle.filter((sandbox) => sandbox.key === key).length + (this.#warming.get(key) ?? 0);
    for (let i = ready; i < this.limits.warm && this.#live.size < this.limits.maxSandboxes; i++) {
      this.#warming.set(key, (this.#warming.get(key) ?? 0) + 1);
      const done = () => this.#warming.set(key, (this.#warming.get(key) ?? 1) - 1);
      this.#start(spec).then((sandbox) => {
        done();
        this.release(sandbox, true);
      }, done);
    }
  }
}
