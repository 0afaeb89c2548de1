/**
 * The native binding specification brain:tool@0.2.0, generated from
 * contracts/tool.wit (which is published beside it) by `deno task build:components`.
 *
 * @example
 * ```ts
 * import { TOOL_WIT } from "@aexhq/brain/contracts/tool.wit";
 * console.log(TOOL_WIT.includes("package brain:tool@0.2.0;")); // true
 * ```
 *
 * @module
 */

/** The text of contracts/tool.wit. */
export const TOOL_WIT: string =
  '/// The native binding of a Brain Tool: what a Component exports and the host\n/// functions Brain gives it. Every JSON argument is a UTF-8 JSON text.\npackage brain:tool@0.2.0;\n\n/// Functions Brain provides to a running Component.\ninterface host {\n  /// Why Brain refused a host call: a stable code (such as `budget_exceeded`,\n  /// `call_finished`, `invalid_output`, `invalid_argument`, `not_implemented`)\n  /// and a human-readable message.\n  record refusal {\n    code: string,\n    message: string,\n  }\n\n  /// Appends an extension Event with JSON `data`. Returns once the Event is\n  /// committed to the session journal, with its sequence.\n  emit: func(event: string, data: string) -> result<u64, refusal>;\n\n  /// Appends a result: `outcome` is an Outcome envelope in JSON, such as\n  /// `{"status":"ok","value":...}`; `content` is optional model-facing text.\n  /// A non-success outcome also ends the call. Returns the committed sequence.\n  emit-result: func(outcome: string, content: option<string>) -> result<u64, refusal>;\n\n  /// Ends the synchronous phase, publishing `outcome` first when given; `run`\n  /// may keep executing and emitting until it calls `finish`.\n  returned: func(outcome: option<string>, content: option<string>) -> result<_, refusal>;\n\n  /// Optionally appends a result (an Outcome envelope in JSON), then commits\n  /// completion. Returns the sequence of the call\'s terminal record. Call it\n  /// before returning from `run` for an ordinary synchronous Tool.\n  finish: func(outcome: option<string>, content: option<string>) -> result<u64, refusal>;\n\n  /// Calls the session\'s model with a JSON ModelRequest; returns a JSON ModelResult.\n  model: func(request: string) -> result<string, refusal>;\n\n  /// Best-effort diagnostics; never enters saved history or model context.\n  telemetry: func(level: string, message: string);\n}\n\n/// What a Component Tool exports.\ninterface tool {\n  /// One invocation. The application\'s session id and call sequence are not exposed.\n  record invocation {\n    /// Name of the placed Tool.\n    tool: string,\n    /// The input, parsed by the Tool\'s input schema, as JSON.\n    input: string,\n    /// The placement\'s parsed options, as JSON.\n    options: string,\n    /// Absolute deadline in milliseconds since the epoch; 0 means unlimited.\n    deadline-at-ms: u64,\n  }\n\n  /// Runs one invocation. An `err` is reported like a thrown exception (`tool_error`).\n  /// Returning without `finish` ends the call with `tool_error`: nothing can finish it later.\n  run: func(invocation: invocation) -> result<_, string>;\n}\n\n/// A Brain Tool Component.\nworld component {\n  import host;\n  export tool;\n}\n';
