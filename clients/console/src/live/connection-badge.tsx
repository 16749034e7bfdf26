/**
 * The header's badge: the live stream's state in a word (live, connecting,
 * down), its details (since when, why it is down) in the title, announced
 * politely to screen readers. Fixed width: a change never shifts the header.
 */
import { useLive } from "../use-live.js";
import type { LiveFeed, LiveState } from "./live-feed.js";

/** The badge's word and title for `state`. */
export function badgeText(state: LiveState): { word: string; title: string } {
  const since = new Date(state.since).toLocaleTimeString();
  switch (state.connection) {
    case "live":
      return { word: "live", title: `following WatchConfig since ${since}` };
    case "connecting":
      return { word: "connecting", title: `opening WatchConfig since ${since}` };
    default:
      return { word: "down", title: `stream down since ${since}: ${state.error}` };
  }
}

/** Says whether the live stream is up, down or connecting. */
export function ConnectionBadge({ live }: { live: LiveFeed }) {
  const state = useLive(live);
  const { word, title } = badgeText(state);
  return (
    <output class={`badge badge-${state.connection}`} aria-live="polite" title={title}>
      {word}
    </output>
  );
}
