import type { PlacedTool, Schema, ToolDeclaration } from "../contract/placement.ts";
import { z } from "zod";
import type { Environment } from "../contract/placement.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import type { AdvertisedTool } from "../journal/records.ts";
import { deepFreeze, frozenCopy } from "../util/freeze.ts";
import type { ToolContext } from "../contract/context.ts";
import { descriptorImplementation } from "./descriptor.ts";
import type { Implementation } from "../contract/placement.ts";
import type { Descriptor } from "../contract/grant.ts";
import { checkZod4, exportInputSchema, exportSchema } from "./schema.ts";
import { errorText } from "../util/error_text.ts";
import { shownValue } from "../util/shown_value.ts";
import { isList } from "../outcome/known_keys.ts";
import { type SafeParsed, safeParseNow } from "./parse_now.ts";

/** The parsed options a run function sees: the options schema's output, or none. */
export type ParsedOptions<S> = S extends Schema ? S["_zod"]["output"] : Record<string, never>;
/** What a Tool may publish as success: the output schema's input, or any JSON. */
export type OutputOf<S> = S extends Schema ? S["_zod"]["input"] : JsonValue;

/** The run function of an application Tool. */
export type RunFunction<I extends Schema, O extends Schema | undefined, P extends Schema | undefined> = (
  input: I["_zod"]["output"],
  ctx: ToolContext<ParsedOptions<P>, OutputOf<O>>,
) => unknown;

const DECLARATION_FIELDS = ["name", "description", "input", "output", "options", "run", "implementation"];

/** What `tool()` takes: the contract plus exactly one of `run` or `implementation`. */
export interface ToolSpec<
  I extends Schema,
  O extends Schema | undefined = undefined,
  P extends Schema | undefined = undefined,
> {
  /** Unique name the model calls the Tool by. */
  name: string;
  /** Model-facing description. */
  description: string;
  /** Input schema; its JSON Schema is exported with `io: "input"`. */
  input: I;
  /** Optional output schema; successful values are validated against it. */
  output?: O;
  /** Optional factory options schema, parsed once per placement. */
  options?: P;
  /**
   * The application function, run in the application's process. `return ctx.finish(value)` ends the call with
   * `value`; returning a value without finishing publishes it as a result and keeps the call open (a background
   * Tool) until `ctx.finish()`, its deadline or cancellation, so a `session.call` of it waits for that.
   */
  run?: RunFunction<I, O, P>;
  /** A Component, or a function from parsed options to an Environment-interpreted descriptor. */
  implementation?: Implementation | ((options: ParsedOptions<P>) => Descriptor);
}

/** The placement argument: an optional Environment plus the factory options. */
export type Placement<P> = P extends Schema ? { env?: Environment } & P["_zod"]["input"]
  : { env?: Environment };

/**
 * The arguments of a Tool factory: the placement, optional unless the options
 * schema has required fields (then `lookup()` fails to compile, as it would
 * fail `invalid_options` at run time).
 *
 * @example
 * ```ts
 * import { tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const lookup = tool({
 *   name: "lookup",
 *   description: "Looks a key up.",
 *   input: z.object({ key: z.string() }),
 *   options: z.object({ prefix: z.string() }),
 *   run: ({ key }, ctx) => ctx.finish(ctx.options.prefix + key),
 * });
 * const placed = lookup({ prefix: "customer:" }); // lookup() does not compile
 * console.log(placed.options); // { prefix: "customer:" }
 * ```
 */
export type PlacementArguments<P> = Record<never, never> extends Placement<P> ? [placement?: Placement<P>]
  : [placement: Placement<P>];

/** A Tool factory: call it to place the Tool; it also carries the declaration. */
export interface ToolFactory<P extends Schema | undefined> extends ToolDeclaration {
  /**
   * Places the Tool; factory options are parsed once and frozen. A Tool whose options schema has required fields
   * needs them here (`lookup({ prefix })`): without them placing it does not compile (and fails `invalid_options`
   * for a caller the types do not reach).
   */
  (...placement: PlacementArguments<P>): PlacedTool;
}

/** How a Tool factory is implemented, as {@linkcode tool} recorded it. */
export interface FactoryImplementation {
  /** The kind a placement advertises. */
  readonly kind: AdvertisedTool["implementation"];
  /** The implementation object (a Component, an `http` endpoint), or undefined for host and descriptor Tools. */
  readonly implementation: Implementation | undefined;
}

// Only tool() writes here, so membership is a brand that a look-alike object cannot forge.
const factories = new WeakMap<object, FactoryImplementation>();

/**
 * The implementation of a factory made by {@linkcode tool}, or undefined for
 * any other value, however much it looks like one.
 *
 * @example
 * ```ts
 * import { factoryImplementation } from "@aexhq/brain/environment";
 * import { tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const echo = tool({
 *   name: "echo",
 *   description: "Echo.",
 *   input: z.object({ text: z.string() }),
 *   run: ({ text }, ctx) => ctx.finish(text),
 * });
 * console.log(factoryImplementation(echo)?.kind); // "host"
 * console.log(factoryImplementation({ ...echo })); // undefined
 * ```
 */
export function factoryImplementation(value: unknown): FactoryImplementation | undefined {
  return typeof value === "function" ? factories.get(value) : undefined;
}

/**
 * Declares a Tool. Schemas are exported to JSON Schema now, so an unrepresentable
 * schema, or an input schema that is not an object (models call Tools with named
 * arguments), fails here with `invalid_schema`; an empty description fails with
 * `invalid_tool`. Call the returned factory to place it: `tools: [echo()]`.
 *
 * @example
 * ```ts
 * import { tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const echo = tool({
 *   name: "echo",
 *   description: "Echo the text.",
 *   input: z.object({ text: z.string() }),
 *   run: ({ text }, ctx) => ctx.finish({ text }),
 * });
 * const placed = echo();
 * console.log(placed.advertised.name); // "echo"
 * ```
 *
 * @example A background Tool: what `run` returns is a result, and the call ends at `ctx.finish`
 * ```ts
 * import { Brain, tool } from "@aexhq/brain";
 * import { z } from "zod";
 *
 * const watch = tool({
 *   name: "watch",
 *   description: "Start watching one job; finishes when it is done.",
 *   input: z.object({ job: z.string() }),
 *   run: ({ job }, ctx) => {
 *     setTimeout(() => ctx.finish({ job, done: true }), 10);
 *     return { job, done: false };
 *   },
 * });
 * await using brain = new Brain();
 * const session = await brain.sessions.create({ tools: [watch()] });
 * const end = await session.call("watch", { job: "7" }, { timeoutMs: 5_000 });
 * console.log(end.cause, end.outcome); // finish { status: "ok", value: { job: "7", done: true } }
 * console.log((await session.read()).filter((record) => record.kind === "tool_result").length); // 2
 * ```
 */
export function tool<
  I extends Schema,
  O extends Schema | undefined = undefined,
  P extends Schema | undefined = undefined,
>(given: ToolSpec<I, O, P>): ToolFactory<P> {
  if (given === null || typeof given !== "object" || isList(given)) {
    throw new BrainError("invalid_tool", "tool() takes a declaration object: { name, description, input, run }");
  }
  const spec = readDeclaration(given);
  const { name, description } = spec;
  if (typeof name !== "string" || !/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(name)) {
    throw new BrainError("invalid_tool", `tool name ${shownValue(name)} must match [A-Za-z_][A-Za-z0-9_.-]{0,63}`);
  }
  const unknown = Object.keys(spec).filter((key) => !DECLARATION_FIELDS.includes(key));
  if (unknown.length > 0) {
    // There is no universal needs declaration: dependencies belong to the implementation or its Environment.
    throw new BrainError(
      "invalid_tool",
      `tool ${name}: unknown declaration field ${unknown.join(", ")}: the fields are ${DECLARATION_FIELDS.join(", ")}`,
    );
  }
  if ((spec.run === undefined) === (spec.implementation === undefined)) {
    throw new BrainError("invalid_tool", `tool ${name}: give exactly one of run or implementation`);
  }
  if (spec.run !== undefined && typeof spec.run !== "function") {
    throw new BrainError("invalid_tool", `tool ${name}: run must be a function, got ${typeof spec.run}`);
  }
  if (spec.implementation !== undefined && !isImplementation(spec.implementation)) {
    throw new BrainError(
      "invalid_tool",
      `tool ${name}: implementation must be a Component, an http() endpoint or a function returning a descriptor`,
    );
  }
  if (typeof description !== "string" || description.trim() === "") {
    throw new BrainError(
      "invalid_tool",
      `tool ${name}: give it a description, the text a model reads to decide when to call it`,
    );
  }
  if (spec.options !== undefined) checkZod4(name, "options", spec.options);
  const declaration: ToolDeclaration = {
    name,
    description,
    input: spec.input,
    output: spec.output,
    inputSchema: exportInputSchema(name, spec.input),
    outputSchema: spec.output ? exportSchema(name, "output", spec.output) : undefined,
    run: spec.run as ToolDeclaration["run"],
  };
  const kind = spec.run
    ? "host"
    : typeof spec.implementation === "function"
    ? "descriptor"
    : (spec.implementation as Implementation).kind;

  const place = (placement: Record<string, unknown> = {}): PlacedTool => {
    if (typeof placement !== "object" || placement === null || isList(placement)) {
      throw new BrainError("invalid_options", `tool ${name}: place it with an options object, as in ${name}({ ... })`);
    }
    const { env, ...raw } = readPlacement(name, placement);
    const envName = env === undefined ? undefined : environmentName(name, env);
    const options = parseOptions(name, spec.options, raw);
    const implementation = typeof spec.implementation === "function"
      ? descriptorImplementation(name, describe(name, spec.implementation, options as ParsedOptions<P>), env)
      : spec.implementation;
    const advertised: AdvertisedTool = {
      name,
      description,
      inputSchema: declaration.inputSchema,
      implementation: kind,
    };
    if (declaration.outputSchema) advertised.outputSchema = declaration.outputSchema;
    if (envName !== undefined) advertised.env = envName;
    return Object.freeze({ tool: declaration, options, env, implementation, advertised: deepFreeze(advertised) });
  };
  for (const [key, value] of Object.entries(declaration)) {
    Object.defineProperty(place, key, { value, enumerable: true });
  }
  const implementation = typeof spec.implementation === "function" ? undefined : spec.implementation;
  factories.set(place, Object.freeze({ kind, implementation }));
  return Object.freeze(place) as unknown as ToolFactory<P>;
}

/** The descriptor `implementation` makes from the parsed options; a throw is `invalid_tool`. */
function describe<O>(name: string, implementation: (options: O) => Descriptor, options: O): Descriptor {
  try {
    return implementation(options);
  } catch (error) {
    if (error instanceof BrainError) throw error;
    throw new BrainError("invalid_tool", `tool ${name}: its implementation threw: ${errorText(error)}`, {
      cause: error,
    });
  }
}

function parseOptions(
  name: string,
  schema: Schema | undefined,
  raw: Record<string, unknown>,
): Readonly<Record<string, unknown>> {
  if (!schema) {
    const extra = Object.keys(raw);
    if (extra.length > 0) {
      throw new BrainError("invalid_options", `tool ${name} takes no options, got ${extra.join(", ")}`);
    }
    return Object.freeze({});
  }
  let parsed: SafeParsed | Promise<SafeParsed>;
  try {
    parsed = safeParseNow(schema, raw);
  } catch (error) {
    // A refinement or transform that throws lands here.
    throw new BrainError("invalid_options", `tool ${name}: its options could not be parsed: ${errorText(error)}`, {
      cause: error,
    });
  }
  if (parsed instanceof Promise) {
    // Placing a Tool is synchronous, so an async check or transform is refused; its promise is caught here (zod's
    // synchronous parse would drop it, and its rejection would go unhandled).
    parsed.catch(() => {});
    throw new BrainError(
      "invalid_options",
      `tool ${name}: its options schema is asynchronous (an async refine or transform); factory options parse synchronously`,
    );
  }
  if (!parsed.success) {
    const message = `tool ${name}: invalid options: ${z.prettifyError(parsed.error)}${misspelled(schema, raw)}`;
    throw new BrainError("invalid_options", message, { details: parsed.error.issues as unknown as JsonValue });
  }
  try {
    return frozenCopy(parsed.data as Record<string, unknown>);
  } catch (error) {
    // A getter or Proxy trap in what the schema let through.
    throw new BrainError("invalid_options", `tool ${name}: its options cannot be read: ${errorText(error)}`, {
      cause: error,
    });
  }
}

/** Names the given options an object schema does not know (zod drops them), the likely misspellings; or "". */
function misspelled(schema: Schema, raw: Record<string, unknown>): string {
  let known: string[];
  try {
    const shape: unknown = (schema as { shape?: unknown }).shape;
    // A loose object keeps other keys, and a strict one names them itself.
    if (
      typeof shape !== "object" || shape === null || (schema._zod.def as { catchall?: unknown }).catchall !== undefined
    ) return "";
    known = Object.keys(shape);
  } catch {
    return "";
  }
  const unknown = Object.keys(raw).filter((key) => !known.includes(key));
  if (unknown.length === 0) return "";
  return `\n(unknown option ${unknown.join(", ")}: the options are ${known.join(", ") || "none"})`;
}

/** The declaration's fields read once, so a getter or Proxy that throws fails as `invalid_tool`. */
function readDeclaration<T extends object>(spec: T): T {
  try {
    return { ...spec };
  } catch (error) {
    throw new BrainError("invalid_tool", `tool(): the declaration cannot be read: ${errorText(error)}`);
  }
}

/** The placement argument read once, so a getter or Proxy that throws fails as `invalid_options`. */
function readPlacement(name: string, placement: object): { env?: Environment } & Record<string, unknown> {
  try {
    return { ...placement };
  } catch (error) {
    throw new BrainError("invalid_options", `tool ${name}: its placement cannot be read: ${errorText(error)}`);
  }
}

/** True for an implementation `tool()` can place: a descriptor function or an object with a kind, admit and execute. */
function isImplementation(value: unknown): boolean {
  if (typeof value === "function") return true;
  if (typeof value !== "object" || value === null) return false;
  try {
    const { kind, admit, execute } = value as Implementation;
    return typeof kind === "string" && typeof admit === "function" && typeof execute === "function";
  } catch {
    return false;
  }
}

/** The name of a placement's Environment; `invalid_options` for a value that is not one. */
function environmentName(name: string, env: unknown): string {
  try {
    const { name: envName } = env as Environment;
    if (typeof env === "object" && env !== null && typeof envName === "string") return envName;
  } catch {
    // A getter or Proxy that throws is no Environment either.
  }
  throw new BrainError("invalid_options", `tool ${name}: env must be an Environment, such as hostEnv({ name: "app" })`);
}
