import type { TelemetryEntry } from "../../mod.ts";

/** Collects telemetry entries. */
export function telemetrySink(): { entries: TelemetryEntry[]; telemetry: (entry: TelemetryEntry) => void } {
  const entries: TelemetryEntry[] = [];
  return { entries, telemetry: (entry) => entries.push(entry) };
}
