/**
 * `useFleetData`: the fleet view's data, refreshed every second while the
 * page is visible (more often for a while after a change:
 * `refresh-schedule.ts`), at once when it becomes visible, when the live
 * feed brings a change (its newest change; keep-alives and its first
 * snapshot are none) and when the filters change, never two calls in flight
 * (`single-flight.ts`). On an error the last answer stays and the error is
 * returned next to it; an answer for filters no longer shown is dropped.
 */
import { ConnectError } from "@connectrpc/connect";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ConfigClient } from "../../api.js";
import type { LiveChange } from "../../live/live-feed.js";
import type { FleetFilters } from "./fleet-filters.js";
import { type FleetSnapshot, loadFleet } from "./fleet-source.js";
import { FOLLOW_FOR_MS, FOLLOW_MS, refreshDue } from "./refresh-schedule.js";
import { type SingleFlight, singleFlight } from "./single-flight.js";

/** The last answer (undefined before the first) and the last refresh's error (empty when it worked). */
export interface FleetData {
  readonly snapshot: FleetSnapshot | undefined;
  readonly error: string;
}

const visible = () => document.visibilityState === "visible";

/** The fleet for `filters`, refreshed as described above; `latest` is the feed's newest change. */
export function useFleetData(
  client: ConfigClient,
  filters: FleetFilters,
  latest: LiveChange | undefined,
): FleetData {
  const [data, setData] = useState<FleetData>({ snapshot: undefined, error: "" });
  const wanted = useRef(filters);
  wanted.current = filters;
  const flight = useRef<SingleFlight | undefined>(undefined);
  const followUntil = useRef(0);
  useEffect(() => {
    const abort = new AbortController();
    let fallback = false;
    let lastStart = 0;
    const runner = singleFlight(async () => {
      lastStart = Date.now();
      const asked = wanted.current;
      const askedKey = JSON.stringify(asked);
      try {
        const snapshot = await loadFleet(client, asked, abort.signal, fallback);
        fallback = snapshot.source === "origins";
        if (JSON.stringify(wanted.current) === askedKey) setData({ snapshot, error: "" });
      } catch (error) {
        if (!abort.signal.aborted) {
          setData((last) => ({ ...last, error: ConnectError.from(error).message }));
        }
      }
    });
    flight.current = runner;
    const tick = () => {
      if (visible() && refreshDue(Date.now(), lastStart, followUntil.current)) runner.trigger();
    };
    const timer = setInterval(tick, FOLLOW_MS);
    const onVisibility = () => visible() && runner.trigger();
    document.addEventListener("visibilitychange", onVisibility);
    return () => {
      runner.stop();
      abort.abort();
      clearInterval(timer);
      document.removeEventListener("visibilitychange", onVisibility);
    };
  }, [client]);
  const key = JSON.stringify(filters);
  const lastChange = useRef(latest);
  // The first refresh, and one at once for new filters or a new change (then followed).
  useEffect(() => {
    if (latest !== lastChange.current) followUntil.current = Date.now() + FOLLOW_FOR_MS;
    lastChange.current = latest;
    flight.current?.trigger();
  }, [key, latest]);
  return data;
}
