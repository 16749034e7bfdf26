/**
 * `useLive`: a Preact hook that renders with the live feed's current state
 * and re-renders on each change.
 */
import { useEffect, useState } from "preact/hooks";
import type { LiveFeed, LiveState } from "./live/live-feed.js";

/** The feed's current state; the component re-renders when it changes. */
export function useLive(feed: LiveFeed): LiveState {
  const [state, setState] = useState(() => feed.current());
  useEffect(() => {
    setState(feed.current());
    return feed.subscribe(() => setState(feed.current()));
  }, [feed]);
  return state;
}
