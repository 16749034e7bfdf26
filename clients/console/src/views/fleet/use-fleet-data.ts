/**
 * `useFleetData`: the fleet view's data, refreshed every second while the
 * page is visible (more often for a while after a change:
 * `refresh-schedule.ts`), at once when it becomes visible, when the live
 * feed's revision changes and when the filters change, never two calls in flight
 * (`single-flight.ts`). On an error the last answer stays and the error is
 * returned next to it; an answer for filters no longer shown is dropped.
 */
import { ConnectError } from "@connectrpc/connect";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ConfigClient } from "../../api.js";
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

/** The fleet for `filters`, refreshed as described above; `revision` is the live feed's. */
export function useFleetData(
  client: ConfigClient,
  filters: FleetFilters,
  revision: bigint,
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
  const lastRevision = useRef(revision);
  // The first refresh, and one at once for new filters or a new revision (then followed).
  useEffect(() => {
    // A change after the feed's first snapshot is refreshed at once and followed; the first
    // snapshot itself is no change (the first refresh is under way, the timer does the rest).
    const changed = revision !== lastRevision.current;
    const first = changed && lastRevision.current === 0n;
    if (changed && !first) followUntil.current = Date.now() + FOLLOW_FOR_MS;
    lastRevision.current = revision;
    if (!first) flight.current?.trigger();
  }, [key, revision]);
  return data;
}
