import { Component } from "../component/component.ts";
import type { PlacedTool } from "../contract/placement.ts";
import type { AdvertisedTool } from "../journal/records.ts";
import { contentHash } from "../util/content_hash.ts";

/**
 * What a session keeps of each of its Tools: the advertised declaration and,
 * for a Component, the hash of its bytes, so reopening the session needs the
 * same bytes (an uploaded Component already names its hash).
 */
export function advertisedTools(tools: readonly PlacedTool[]): Promise<AdvertisedTool[]> {
  return Promise.all(tools.map(async ({ advertised, implementation }) => {
    if (!(implementation instanceof Component) || advertised.sha256 !== undefined) return advertised;
    const bytes = await implementation.load() as Uint8Array<ArrayBuffer>;
    return { ...advertised, sha256: await contentHash(bytes) };
  }));
}
