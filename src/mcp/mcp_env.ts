import { checkTimerMs } from "../util/timer.ts";
import { shownValue } from "../util/shown_value.ts";
import type { BrainEnvGrant } from "../contract/grant.ts";
import type { Environment, EnvironmentAdmission, EnvironmentTools } from "../contract/placement.ts";
import { grantPermissions, permissionFlags } from "../env/grants.ts";
import { environmentOptions } from "../env/host_env.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { deepFreeze } from "../util/freeze.ts";
import { allKeys, readList, readOptions } from "../outcome/known_keys.ts";
import { checkHeaders } from "../util/http_headers.ts";
import { McpConnection, type McpTarget } from "./mcp_connection.ts";
import { mcpTool } from "./mcp_tool.ts";

/** Options both kinds of {@linkcode mcpEnv} take. */
export interface McpEnvCommon {
  /** Binding name, unique among a session's Environments; `[A-Za-z0-9_.-]+`. */
  name: string;
  /** The server's tools to place, by their MCP names; all of them by default. */
  tools?: readonly string[];
  /** Prepended to each placed Tool's name, to keep two servers' tools apart; none by default. */
  prefix?: string;
  /** How long connecting and listing tools may take, in ms; 10 s by default. */
  timeoutMs?: number;
}

/** An MCP server Brain starts and talks to over stdin and stdout. */
export interface McpStdioOptions extends McpEnvCommon {
  /** The program, such as `Deno.execPath()` or `deno`; it must be in the Brain's `allow.run`. */
  command: string;
  /** Its arguments. */
  args?: readonly string[];
  /** Names of Brain's environment variables the process gets (nothing else is inherited); each must be allowed. */
  env?: readonly string[];
  /** A per-session workspace, which becomes the process's working directory. */
  filesystem?: { workspace: "read" | "write" };
  /** Hosts a Deno server may connect to (a Deno `run` command only). */
  net?: readonly string[];
}

/** An MCP server at a streamable HTTP endpoint. */
export interface McpHttpOptions extends McpEnvCommon {
  /** The endpoint's `http:` or `https:` URL; its host must be in the Brain's `allow.net`. */
  url: string | URL;
  /** Headers sent with every request, such as credentials; only their names are described. */
  headers?: Readonly<Record<string, string>>;
}

/** Options of {@linkcode mcpEnv}: a stdio server (`command`) or an HTTP one (`url`). */
export type McpEnvOptions = McpStdioOptions | McpHttpOptions;

// Short flags cluster (`-NR` is `-N -R`), and `-P`/`--permission-set` loads permissions from a config file: any
// short cluster naming a permission letter counts, whatever else it holds.
const DENO_PERMISSION_FLAG = /^(--allow-|--deny-|--permission-set|--no-prompt|--unsafely-|-(?!-)[^=]*[ARWNESIP])/;

/** Every option of a stdio or an HTTP server; which ones a server takes is checked by its kind. */
const MCP_ENV_OPTIONS = [
  ...new Set([
    ...allKeys<McpStdioOptions>({
      name: true,
      tools: true,
      prefix: true,
      timeoutMs: true,
      command: true,
      args: true,
      env: true,
      filesystem: true,
      net: true,
    }),
    ...allKeys<McpHttpOptions>({ name: true, tools: true, prefix: true, timeoutMs: true, url: true, headers: true }),
  ]),
];

/**
 * An Environment that places an MCP server's tools in a session. Give it to
 * `brain.sessions.create({ environments: [...] })`: Brain checks its grant
 * against the allow-list, connects, lists the server's tools (or the ones
 * named) and places each as a Brain Tool with the server's JSON Schemas. Every
 * call is journaled like any other: its intent commits before `tools/call` is
 * sent, once; progress notifications commit as ordered `progress` Events before
 * the result; `isError` is an `error` outcome; a deadline or cancellation is sent
 * as an MCP cancellation; a connection lost after sending ends the call `unknown`
 * and nothing is sent again. A stdio server runs with a cleared environment
 * (only the granted variables), in the session workspace when one is granted,
 * and, when `command` is Deno (`Deno.execPath()` or `deno`), with exactly the grant's permissions: its
 * `args` start with `run` (any other start of Deno is refused `invalid_argument`, as are permission flags).
 * A server that cannot start fails session creation with `setup_failed`; when a
 * connection closes, the next call connects again and a failure ends that call
 * `setup_failed`. The session's end closes the connection (and the process).
 *
 * @example
 * ```ts
 * import { Brain } from "@aexhq/brain";
 * import { mcpEnv } from "@aexhq/brain/mcp";
 *
 * const everything = mcpEnv({
 *   name: "everything",
 *   command: "deno",
 *   args: ["run", "npm:@modelcontextprotocol/server-everything@2026.8.31", "stdio"],
 *   env: ["GZIP_MAX_FETCH_SIZE", "GZIP_MAX_FETCH_TIME_MILLIS", "GZIP_ALLOWED_DOMAINS"],
 *   tools: ["echo", "get-sum"],
 * });
 * const brain = new Brain({
 *   allow: { run: ["deno"], env: ["GZIP_MAX_FETCH_SIZE", "GZIP_MAX_FETCH_TIME_MILLIS", "GZIP_ALLOWED_DOMAINS"] },
 * });
 * try {
 *   const session = await brain.sessions.create({ environments: [everything] });
 *   console.log((await session.call("get-sum", { a: 1, b: 2 })).outcome);
 * } finally {
 *   await brain.close();
 * }
 * ```
 */
export function mcpEnv(given: McpEnvOptions): Environment {
  const options = readOptions("mcpEnv options", given, MCP_ENV_OPTIONS);
  const { name } = environmentOptions({ name: options.name });
  const invalid = (why: string): never => {
    throw new BrainError("invalid_argument", `environment ${name}: ${why}`);
  };
  const tools = options.tools === undefined ? undefined : stringList(options.tools, "tools", invalid);
  const prefix = options.prefix ?? "";
  // Each Tool is named prefix + its MCP name, so the prefix is the start of a Brain Tool name.
  if (typeof prefix !== "string" || !(prefix === "" || /^[A-Za-z_][A-Za-z0-9_.-]{0,62}$/.test(prefix))) {
    invalid("prefix must start a Tool name: a letter or _, then up to 62 letters, digits, _, . or -");
  }
  const timeoutMs = checkTimerMs(`environment ${name}: timeoutMs`, options.timeoutMs ?? 10_000);
  const isStdio = "command" in options;
  if (isStdio === "url" in options) invalid("give exactly one of command (stdio) or url (streamable HTTP)");
  const server = isStdio
    ? stdioServer(options as McpStdioOptions, invalid)
    : httpServer(options as McpHttpOptions, invalid);

  const env: Environment = Object.freeze({
    name,
    kind: "mcp",
    grant: server.grant,
    control: Object.freeze([]),
    describe: (): JsonValue => ({
      kind: "mcp",
      name,
      ...server.description,
      ...(tools ? { tools: [...tools] } : {}),
      ...(prefix ? { prefix } : {}),
    }),
    place: async ({ workspace }: EnvironmentAdmission): Promise<EnvironmentTools> => {
      const connection = new McpConnection(server.target(workspace), timeoutMs);
      try {
        const listed = await connection.tools();
        const byName = new Map(listed.map((tool) => [tool.name, tool]));
        const missing = (tools ?? []).filter((tool) => !byName.has(tool));
        if (missing.length > 0) {
          throw new BrainError(
            "invalid_tool",
            `environment ${name}: the MCP server has no tool ${missing.join(", ")}`,
            {
              details: { missing, listed: [...byName.keys()] },
            },
          );
        }
        const chosen = tools ? tools.map((tool) => byName.get(tool)!) : listed;
        return { tools: chosen.map((tool) => mcpTool(env, connection, tool, prefix)), close: () => connection.close() };
      } catch (error) {
        await connection.close();
        throw error;
      }
    },
  });
  return env;
}

/** The values of the variables a stdio server is granted; a missing `--allow-env` is `permission_denied` naming it. */
function readVariables(variables: readonly string[]): Record<string, string> {
  const env: Record<string, string> = {};
  for (const variable of variables) {
    let value: string | undefined;
    try {
      value = Deno.env.get(variable);
    } catch (error) {
      if (!(error instanceof Deno.errors.NotCapable || error instanceof Deno.errors.PermissionDenied)) throw error;
      throw new BrainError(
        "permission_denied",
        `the MCP server is granted the environment variables ${variables.join(", ")}, and reading them needs ` +
          `--allow-env=${variables.join(",")}`,
        { cause: error },
      );
    }
    if (value !== undefined) env[variable] = value;
  }
  return env;
}

interface Server {
  grant: Readonly<BrainEnvGrant>;
  description: Record<string, JsonValue>;
  target(workspace: string | undefined): McpTarget;
}

function stdioServer(options: McpStdioOptions, invalid: (why: string) => never): Server {
  const { command } = options;
  if (typeof command !== "string" || command === "") invalid("command must be a non-empty string");
  const args = stringList(options.args ?? [], "args", invalid, true);
  const variables = stringList(options.env ?? [], "env", invalid);
  const net = stringList(options.net ?? [], "net", invalid);
  const mode = options.filesystem?.workspace;
  if (options.filesystem && mode !== "read" && mode !== "write") {
    invalid(`filesystem.workspace must be "read" or "write"`);
  }
  const deno = isDeno(command);
  // Any other start of Deno (`eval`, `task`, a flag such as -A before the subcommand) would run with permissions of its own.
  if (deno && args[0] !== "run") {
    invalid(
      `a Deno server starts with args ["run", module, ...], so that it runs with exactly its grant's permissions; ` +
        `got ${args.length ? shownValue(args[0]) : "no args"}`,
    );
  }
  if (net.length > 0 && !deno) invalid("net can be granted only to a Deno server started with run");
  if (deno && args.some((arg) => DENO_PERMISSION_FLAG.test(arg))) {
    invalid("a Deno server's permissions come from its grant: remove permission flags from args");
  }
  const grant: BrainEnvGrant = { run: [command] };
  if (mode) grant.filesystem = { workspace: mode };
  if (net.length) grant.net = [...net];
  if (variables.length) grant.env = [...variables];
  const frozen = deepFreeze(grant);
  return {
    grant: frozen,
    description: { command, args: [...args], grant: frozen as JsonValue },
    target: (workspace) => {
      const env = readVariables(variables);
      const flags = deno ? ["--no-prompt", ...permissionFlags(grantPermissions(frozen, workspace))] : [];
      return {
        kind: "stdio",
        command: { command, args: deno ? ["run", ...flags, ...args.slice(1)] : [...args], env, cwd: workspace },
      };
    },
  };
}

function httpServer(options: McpHttpOptions, invalid: (why: string) => never): Server {
  let url: URL;
  try {
    url = new URL(options.url);
  } catch {
    return invalid(`url ${shownValue(options.url)} is not a URL`);
  }
  if ((url.protocol !== "http:" && url.protocol !== "https:") || url.username || url.password) {
    invalid("url must be http(s) without credentials");
  }
  const headers = checkHeaders(`environment ${options.name}`, options.headers);
  const grant = deepFreeze<BrainEnvGrant>({ net: [url.host] });
  return {
    grant,
    description: { url: url.href, headers: Object.keys(headers).sort() },
    target: () => ({ kind: "http", url, headers }),
  };
}

/** True for Deno's own executable, or a command named `deno`. */
function isDeno(command: string): boolean {
  return command === Deno.execPath() || /(^|[\\/])deno(\.exe)?$/.test(command);
}

function stringList(
  value: unknown,
  field: string,
  invalid: (why: string) => never,
  allowEmpty = false,
): readonly string[] {
  let list: unknown[] | undefined;
  try {
    list = readList(field, value);
  } catch {
    // Refused below, as any other value that is not a list of strings.
  }
  if (!list || list.some((entry) => typeof entry !== "string" || (!allowEmpty && entry === ""))) {
    invalid(`${field} must be a list of ${allowEmpty ? "" : "non-empty "}strings`);
  }
  return Object.freeze(list as string[]);
}
