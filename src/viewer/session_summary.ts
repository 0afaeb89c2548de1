import type { AdvertisedTool, SessionMeta } from "../journal/records.ts";

/** A session as the viewer shows it: its metadata without the host's token hash, and its last sequence. */
export interface SessionSummary {
  /** Session id. */
  id: string;
  /** Creation time in milliseconds since the epoch. */
  createdAt: number;
  /** The Tools placed in the session. */
  tools: AdvertisedTool[];
  /** The session's provider and model names, when it has a model. */
  model?: { provider: string; model: string };
  /** The id of the host the session is placed in, when it has one. */
  host?: string;
  /** The last committed sequence, 0 for an empty session. */
  head: number;
}

/** The summary of `meta` at `head`; the token hash never leaves the server. */
export function sessionSummary(meta: SessionMeta, head: number): SessionSummary {
  const summary: SessionSummary = { id: meta.id, createdAt: meta.createdAt, tools: meta.tools, head };
  if (meta.model) summary.model = meta.model;
  if (meta.host) summary.host = meta.host.id;
  return summary;
}
