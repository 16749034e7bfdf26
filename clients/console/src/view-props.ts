/**
 * What every view gets from the shell: the ConfigService client, the live
 * feed, its route, and how to go to another route.
 */
import type { ConfigClient } from "./api.js";
import type { LiveFeed } from "./live/live-feed.js";
import type { Route } from "./route.js";

/** The props of each view component. */
export interface ViewProps {
  /** The ConfigService (through the dashboard's gateway). */
  readonly client: ConfigClient;
  /** The live WatchConfig stream. */
  readonly live: LiveFeed;
  /** The current route (view, service, query). */
  readonly route: Route;
  /**
   * The view shows its first data: the shell opens the live stream now (the
   * Fleet view's first call goes first; other views' streams open at once).
   */
  readonly ready: () => void;
  /** Goes to `hash` (a `formatRoute` result); `replace` keeps the history entry (filters). */
  readonly navigate: (hash: string, options?: { replace?: boolean }) => void;
}
