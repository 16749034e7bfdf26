/**
 * `useFleetData`: the fleet view's data, refreshed every second while the
 * page is visible, at once when it becomes visible, when the live feed's
 * revision changes and when the filters change, never two calls in flight
 * (`single-flight.ts`). On an error the last answer stays and the error is
 * returned next to it; an answer for filters no longer shown is dropped.
 */
import { ConnectError } from "@connectrpc/connect";
import { useEffect, useRef, useState } from "preact/hooks";
import type { ConfigClient } from "../../api.js";
import type { FleetFilters } from "./fleet-filters.js";
import { type FleetSnapshot, loadFleet } from "./fleet-source.js";
import { type SingleFlight, singleFlight } from "./single-flight.js";

/** How often the view refreshes while the page is visible. */
export const REFRESH_MS = 1000;

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
  useEffect(() => {
    const abort = new AbortController();
    let fallback = false;
    const runner = singleFlight(async () => {
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
    const timer = setInterval(() => visible() && runner.trigger(), REFRESH_MS);
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
  // The first refresh, and one at once for new filters or a new revision.
  useEffect(() => flight.current?.trigger(), [key, revision]);
  return data;
}
