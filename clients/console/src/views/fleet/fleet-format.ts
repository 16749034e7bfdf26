/**
 * The fleet view's words for states, versions and spans: each state as a CSS
 * class suffix, a word and a symbol (never colour alone), a version's short
 * fixed-width form, and spans as `3m 2s`. Pure.
 */
import { FleetState } from "../../../../../gen/aether/registry/v1/fleet_pb.js";
import { FLEET_SEVERITY } from "../../../../../services/common/fleet-state.js";

/** A cell's state as the URL, `data-state` and the `.state-*` classes spell it. */
export type CellState = "in-sync" | "behind" | "rejecting" | "drifted" | "stale";

/** Every cell state, worst first (the order the RPC sorts by). */
export const CELL_STATES: readonly CellState[] = [
  "stale",
  "rejecting",
  "behind",
  "drifted",
  "in-sync",
];

// The RPC's severity order is CELL_STATES' order.
const BY_ENUM: ReadonlyMap<FleetState, CellState> = new Map(
  FLEET_SEVERITY.map((state, i) => [state, CELL_STATES[i] as CellState]),
);

/** The cell state of an RPC state; undefined for UNSPECIFIED (or an unknown number). */
export function cellState(state: FleetState): CellState | undefined {
  return BY_ENUM.get(state);
}

/** The RPC state of a cell state (for the request's `states` filter). */
export function fleetStateOf(state: CellState): FleetState {
  for (const [value, name] of BY_ENUM) if (name === state) return value;
  return FleetState.UNSPECIFIED;
}

/** Whether `text` names a cell state (a URL's `state=` value). */
export function isCellState(text: string): text is CellState {
  return (CELL_STATES as readonly string[]).includes(text);
}

/** The word and symbol a state is shown with next to its colour. */
export const STATE_LABEL: Readonly<Record<CellState, { word: string; symbol: string }>> = {
  "in-sync": { word: "in sync", symbol: "✓" },
  behind: { word: "behind", symbol: "↓" },
  rejecting: { word: "rejecting", symbol: "✕" },
  drifted: { word: "drifted", symbol: "≠" },
  stale: { word: "stale", symbol: "?" },
};

const RFC3339 = /^\d{4}-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?Z$/;

/**
 * A version's short form, always 18 characters for a canonical version
 * (`MM-DD HH:MM:SS.mmm` of its UTC export time) so that a change of version
 * shifts nothing; `—` for none; any other text cut to 18 characters.
 */
export function shortVersion(version: string): string {
  if (version === "") return "—";
  const m = RFC3339.exec(version);
  if (m === null) return version.length > 18 ? `${version.slice(0, 17)}…` : version;
  const millis = (m[6] ?? "").padEnd(3, "0").slice(0, 3);
  return `${m[1]}-${m[2]} ${m[3]}:${m[4]}:${m[5]}.${millis}`;
}

/** A span of `ms` milliseconds: `0s`, `42s`, `3m 2s`, `2h 5m`, `3d 4h` (negative counts as 0). */
export function formatSpan(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m ${s % 60}s`;
  if (s < 86_400) return `${Math.floor(s / 3600)}h ${Math.floor((s % 3600) / 60)}m`;
  return `${Math.floor(s / 86_400)}d ${Math.floor((s % 86_400) / 3600)}h`;
}
