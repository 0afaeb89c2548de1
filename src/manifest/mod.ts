/**
 * The brain-tools helper: checks what a package of Tools publishes. Import a
 * module's Tool factories and get a JSON manifest of their contracts and
 * executable references, or run it as a command:
 *
 * ```sh
 * deno run --allow-read=. jsr:@aexhq/brain/tools/cli check ./mod.ts
 * ```
 *
 * @example
 * ```ts ignore
 * import { inspectToolModule } from "@aexhq/brain/tools";
 *
 * const manifest = await inspectToolModule("./mod.ts");
 * for (const entry of manifest.tools) console.log(entry.name, entry.implementation);
 * ```
 *
 * @module
 */
export { type ComponentReference, inspectToolModule, type ToolManifest, type ToolManifestEntry } from "./inspect.ts";
export type { JsonValue } from "../outcome/json.ts";
export type { AdvertisedTool } from "../journal/records.ts";
