/**
 * The Live view's model, pure: the live stream's state in words (live
 * since, down since with the error, resumed at by resume or by a fresh
 * snapshot), its revision, and the rows of the latest changes, newest first
 * and bounded, each linking to its service's view.
 */
import type { LiveChange, LiveState } from "../../live/live-feed.js";
import { formatRoute } from "../../route.js";

/** How many changes the view lists (the list's height is fixed for that many rows). */
export const MAX_CHANGE_ROWS = 50;

/** The stream's state as the view says it. */
export interface StreamSummary {
  /** The connection: `connecting`, `live` or `down` (the view's `data-connection`). */
  readonly connection: LiveState["connection"];
  /** One sentence: `Live since 12:00:01 UTC.`, `Down since … UTC: <error>`, `Connecting…`. */
  readonly headline: string;
  /** How the stream last came back (`Resumed at … UTC by resume …`), or empty when it never went down. */
  readonly resumption: string;
  /** The revision of the last event applied, as digits (`0` before the first). */
  readonly revision: string;
}

/** One row of the changes list. */
export interface ChangeRow {
  /** A stable key for the row (unique within the list). */
  readonly key: string;
  /** When the console received it: `HH:MM:SS.mmm` (UTC). */
  readonly time: string;
  /** The service (`namespace/name` or `@mesh`). */
  readonly service: string;
  /** The service view's hash (`#/service/NS/NAME`); undefined for `@mesh`. */
  readonly href: string | undefined;
  /** The origin cluster. */
  readonly origin: string;
  /** The version (`-` for a delete). */
  readonly version: string;
  /** `upsert` or `delete`. */
  readonly type: LiveChange["type"];
}

/** `HH:MM:SS` of `ms` (UTC). */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 19);
}

/** The stream's state in words (see {@link StreamSummary}). */
export function summarizeStream(state: LiveState): StreamSummary {
  const at = `${clockTime(state.since)} UTC`;
  let headline: string;
  if (state.connection === "live") headline = `Live since ${at}.`;
  else if (state.connection === "down") {
    headline = `Down since ${at}${state.error === "" ? "." : `: ${state.error}`}`;
  } else headline = state.synced ? `Reconnecting since ${at}…` : `Connecting since ${at}…`;
  const resumption =
    state.resumedAt === 0
      ? ""
      : `Resumed at ${clockTime(state.resumedAt)} UTC ${
          state.resumed
            ? "by resume (the changes missed meanwhile were replayed)."
            : "with a fresh snapshot (the missed changes could not be replayed)."
        }`;
  return {
    connection: state.connection,
    headline,
    resumption,
    revision: state.revision.toString(),
  };
}

/** The rows of `changes` (newest first), at most `limit`. */
export function changeRows(
  changes: readonly LiveChange[],
  limit: number = MAX_CHANGE_ROWS,
): ChangeRow[] {
  const seen = new Map<string, number>();
  return changes.slice(0, limit).map((change) => {
    const base = `${change.receivedAt}|${change.type}|${change.service}|${change.origin}|${change.version}`;
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    return {
      key: count === 0 ? base : `${base}|${count}`,
      time: new Date(change.receivedAt).toISOString().slice(11, 23),
      service: change.service,
      href: change.service.includes("/")
        ? formatRoute({ view: "service", service: change.service })
        : undefined,
      origin: change.origin,
      version: change.type === "delete" || change.version === "" ? "-" : change.version,
      type: change.type,
    };
  });
}
