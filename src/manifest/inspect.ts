import { Component } from "../component/component.ts";
import type { AdvertisedTool } from "../journal/records.ts";
import { isInstance } from "../outcome/known_keys.ts";
import { BrainError } from "../outcome/errors.ts";
import type { JsonValue } from "../outcome/json.ts";
import { factoryImplementation } from "../tool/tool.ts";
import { errorText } from "../util/error_text.ts";
import type { ToolFactory } from "../tool/tool.ts";

/** Where a Component's executable lives, as a packaged factory carries it. */
export interface ComponentReference {
  /** The absolute URL the factory reads the Component from. */
  readonly url: string;
  /** The same file relative to the module that declares it (`./inspect.wasm`), when both are `file:` URLs. */
  readonly fromModule?: string;
}

/** One exported Tool of a module, as {@linkcode inspectToolModule} found it. */
export interface ToolManifestEntry {
  /** The export names the factory is reachable by, sorted. */
  readonly exports: string[];
  /** The Tool name the model calls. */
  readonly name: string;
  /** The model-facing description. */
  readonly description: string;
  /** JSON Schema of accepted input. */
  readonly inputSchema: Record<string, JsonValue>;
  /** JSON Schema of parsed output, if the Tool declares one. */
  readonly outputSchema?: Record<string, JsonValue>;
  /** How the Tool is implemented. */
  readonly implementation: AdvertisedTool["implementation"];
  /** The Component's executable, for Component Tools. */
  readonly component?: ComponentReference;
}

/** What a module publishes: its URL and its Tools, sorted by name. */
export interface ToolManifest {
  /** The module's resolved URL. */
  readonly module: string;
  /** Every distinct Tool factory the module exports. */
  readonly tools: ToolManifestEntry[];
}

/**
 * Imports a module and describes every Tool factory (made by `tool()`) it
 * exports: name, description, JSON Schemas, implementation kind and, for
 * Components, the executable reference, whose `file:` target must be a
 * readable file. Run it before publishing to check that a package carries
 * what its factories reference.
 *
 * Throws a `BrainError`: `invalid_argument` when the module cannot be
 * imported, `no_tools` when it exports no Tool, `duplicate_tool` when two
 * different factories share a name, and `component_unreadable` when a
 * Component's file cannot be read.
 *
 * @param specifier A module specifier or URL; relative paths resolve against the working directory.
 *
 * @example
 * ```ts ignore
 * import { inspectToolModule } from "@aexhq/brain/tools";
 *
 * const manifest = await inspectToolModule("./examples/inspect/inspect.ts");
 * console.log(manifest.tools[0].component?.fromModule); // "./inspect.wasm"
 * ```
 */
export async function inspectToolModule(specifier: string | URL): Promise<ToolManifest> {
  const url = resolveSpecifier(specifier);
  await checkModuleFile(url);
  let namespace: Record<string, unknown>;
  try {
    namespace = await import(url.href);
  } catch (error) {
    throw new BrainError("invalid_argument", `cannot import ${url.href}: ${errorText(error)}`, { cause: error });
  }
  const exportsOf = new Map<ToolFactory<undefined>, string[]>();
  for (const [exportName, value] of Object.entries(namespace)) {
    if (!factoryImplementation(value)) continue;
    const factory = value as ToolFactory<undefined>;
    exportsOf.set(factory, [...exportsOf.get(factory) ?? [], exportName]);
  }
  if (exportsOf.size === 0) throw new BrainError("no_tools", `${url.href} exports no Tool made by tool()`);
  const byName = new Map<string, string[]>();
  for (const [factory, names] of exportsOf) {
    const other = byName.get(factory.name);
    if (other) {
      throw new BrainError(
        "duplicate_tool",
        `${url.href}: exports ${other.join(", ")} and ${names.join(", ")} are different Tools named ${factory.name}`,
        { details: { tool: factory.name, exports: [...other, ...names] } },
      );
    }
    byName.set(factory.name, names);
  }
  const tools = await Promise.all([...exportsOf].map(([factory, names]) => describe(url, factory, names)));
  return { module: url.href, tools: tools.sort((a, b) => a.name < b.name ? -1 : 1) };
}

/** The URL's own text, read past a subclass or Proxy that overrides or throws in `href`. */
const urlText = Object.getOwnPropertyDescriptor(URL.prototype, "href")!.get!;

function resolveSpecifier(specifier: string | URL): URL {
  if (isInstance(specifier, URL)) {
    try {
      return new URL(urlText.call(specifier));
    } catch {
      throw new BrainError("invalid_argument", "a Tool module's URL cannot be read");
    }
  }
  if (typeof specifier !== "string") {
    throw new BrainError("invalid_argument", `a Tool module is a URL or a path, got a ${typeof specifier}`);
  }
  if (!specifier.isWellFormed()) {
    // Resolving would replace it with U+FFFD: another module's name.
    throw new BrainError("invalid_argument", "a Tool module's path or URL holds a lone surrogate");
  }
  try {
    return new URL(specifier);
  } catch {
    const cwd = new URL("file:///");
    cwd.pathname = `${Deno.cwd()}/`; // the setter percent-encodes, so a `#` or `?` in the path stays a path
    return new URL(specifier, cwd);
  }
}

/**
 * Refuses a `file:` URL that names something other than a regular file (a
 * FIFO, `/dev/zero`): importing it would read forever. A missing or unreadable
 * file is left for the import to report.
 */
async function checkModuleFile(url: URL): Promise<void> {
  if (url.protocol !== "file:") return;
  let info: Deno.FileInfo;
  try {
    info = await Deno.stat(url);
  } catch {
    return;
  }
  if (!info.isFile) throw new BrainError("invalid_argument", `cannot import ${url.href}: it is not a regular file`);
}

async function describe(module: URL, factory: ToolFactory<undefined>, names: string[]): Promise<ToolManifestEntry> {
  const { kind, implementation } = factoryImplementation(factory)!;
  const entry: ToolManifestEntry = {
    exports: names.sort(),
    name: factory.name,
    description: factory.description,
    inputSchema: factory.inputSchema,
    ...(factory.outputSchema ? { outputSchema: factory.outputSchema } : {}),
    implementation: kind,
  };
  if (!(implementation instanceof Component)) return entry;
  return { ...entry, component: await componentReference(module, factory.name, implementation.url) };
}

async function componentReference(module: URL, tool: string, url: URL): Promise<ComponentReference> {
  if (url.protocol !== "file:") return { url: url.href };
  let info: Deno.FileInfo;
  try {
    // Opening, not stat, proves the file is readable with the permissions the helper runs under.
    using file = await Deno.open(url, { read: true });
    info = await file.stat();
  } catch (error) {
    throw new BrainError("component_unreadable", `tool ${tool}: cannot read the Component ${url.href}: ${error}`, {
      details: { tool, url: url.href },
      cause: error,
    });
  }
  if (!info.isFile) {
    throw new BrainError("component_unreadable", `tool ${tool}: the Component ${url.href} is not a file`, {
      details: { tool, url: url.href },
    });
  }
  return module.protocol === "file:" ? { url: url.href, fromModule: relativeTo(module, url) } : { url: url.href };
}

function relativeTo(module: URL, target: URL): string {
  const from = module.pathname.split("/").slice(0, -1);
  const to = target.pathname.split("/");
  let common = 0;
  while (common < from.length && common < to.length - 1 && from[common] === to[common]) common++;
  const up = from.length - common;
  return (up === 0 ? "./" : "../".repeat(up)) + to.slice(common).map(decodeURIComponent).join("/");
}
