/** The header's badge: the live stream's state (placeholder until the live feed is built). */
import { useLive } from "../use-live.js";
import type { LiveFeed } from "./live-feed.js";

/** Says whether the live stream is up, down or connecting. */
export function ConnectionBadge({ live }: { live: LiveFeed }) {
  const state = useLive(live);
  return (
    <output class={`badge badge-${state.connection}`} aria-live="polite">
      {state.connection}
    </output>
  );
}
