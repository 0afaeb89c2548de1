/** How Brain starts a sandbox: what to load and where its workspace is. */
export interface SandboxInit {
  type: "init";
  /** Absolute path of the glue module. */
  glue: string;
  /** Absolute paths of the core modules, by the names the glue asks for. */
  modules: Record<string, string>;
  /** The workspace preopened as `/`, when the grant has one. */
  workspace: string | undefined;
  /** Whether the grant lets the guest write its workspace. */
  write: boolean;
  /** Environment variable names the grant names; the guest sees only these. */
  env: string[];
  /** The grant's net allow-list: the hosts (`host` or `host:port`) the guest's HTTP and sockets may reach. */
  net: string[];
  /** Largest linear memory a guest instance may grow to, in bytes. */
  memoryBytes: number;
  /** The Deno permissions the sandbox must hold, exactly. */
  permissions: Deno.PermissionOptionsObject;
}

/** One invocation of `brain:tool/tool.run`; its input and options JSON travel as the frame's two texts. */
export interface SandboxCall {
  type: "call";
  invocation: { tool: string; deadlineAtMs: number };
}

/** The answer to one host call, as the guest sees it: `result<T, refusal>`. */
export type Reply =
  | { tag: "ok"; val?: unknown }
  | { tag: "err"; val: { code: string; message: string } };

/** A reply on the wire: a string `ok` value travels as the frame's one text, not in the JSON. */
export interface ReplyMessage {
  type: "reply";
  reply: Reply;
}

/** What Brain sends a sandbox. */
export type ToSandbox = SandboxInit | SandboxCall | ReplyMessage;

/** The host imports a guest calls through Brain. */
export type HostOp = "emit" | "emit-result" | "returned" | "finish" | "model";

/** A host call the guest made; the sandbox blocks until Brain's reply. */
export interface HostCall {
  op: HostOp;
  /** The import's string arguments; on the wire they are the frame's texts. */
  args: (string | undefined)[];
}

/** What a sandbox reports. */
export type FromSandbox =
  | { type: "ready" }
  | { type: "failed"; message: string; exhausted?: boolean }
  | { type: "host"; op: HostOp }
  | { type: "telemetry"; level: string; message: string }
  | { type: "done"; error?: string; exhausted?: boolean; trapped?: boolean };

/** A refusal reply with a stable code. */
export function refusal(code: string, message: string): Reply {
  return { tag: "err", val: { code, message } };
}
