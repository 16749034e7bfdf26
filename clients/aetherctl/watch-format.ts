/**
 * The lines of `aetherctl watch`: one per event, `TYPE REVISION SERVICE ORIGIN
 * VERSION`, kept aligned as the stream goes on; or one proto JSON object per
 * line for scripts. Pure.
 */
import { toJsonString } from "@bufbuild/protobuf";
import {
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { createStreamTable, type TableOptions } from "./table-format.js";

/** The columns of the watch table. */
export const WATCH_HEADER = ["TYPE", "REVISION", "SERVICE", "ORIGIN", "VERSION"] as const;

/** Minimum column widths, so that the first lines already line up with the ones that follow. */
const WATCH_MIN_WIDTHS = [9, 8, 24, 8];

/** The event type's name without the enum prefix: `SNAPSHOT`, `SYNCED`, `UPSERT`, `DELETE`, `KEEPALIVE`. */
export function eventTypeName(type: WatchEventType): string {
  return WatchEventType[type] ?? `UNKNOWN(${type})`;
}

/**
 * The cells of one event. SYNCED says in its last column whether the stream
 * resumed (state kept) or sent a full snapshot (state replaced); DELETE has no
 * version.
 */
export function watchRow(event: WatchConfigResponse): string[] {
  const type = eventTypeName(event.type);
  const revision = String(event.revision);
  if (event.type === WatchEventType.SYNCED) {
    return [type, revision, "-", "-", event.resumed ? "(resumed)" : "(snapshot complete)"];
  }
  if (event.type === WatchEventType.KEEPALIVE) return [type, revision, "-", "-", ""];
  return [
    type,
    revision,
    event.service,
    event.originCluster,
    event.projection?.version ?? (event.type === WatchEventType.DELETE ? "-" : ""),
  ];
}

/** Formats events as they arrive. */
export interface WatchPrinter {
  /** What to print before the first event (the table header; nothing for JSON). */
  start(): string;
  /** The line of one event, with a final `\n`. */
  event(event: WatchConfigResponse): string;
}

/**
 * Creates a printer for `format`: an aligned table, or JSON lines (every
 * event as proto JSON on one line, `revision` as a string as proto JSON
 * writes 64-bit integers).
 */
export function createWatchPrinter(
  format: "table" | "json",
  options: TableOptions = {},
): WatchPrinter {
  if (format === "json") {
    return {
      start: () => "",
      event: (event) => `${toJsonString(WatchConfigResponseSchema, event)}\n`,
    };
  }
  const table = createStreamTable(WATCH_HEADER, WATCH_MIN_WIDTHS, options);
  return { start: () => table.header(), event: (event) => table.row(watchRow(event)) };
}
