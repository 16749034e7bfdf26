/**
 * An empty {@link StatusFeed} that never syncs: the registrar's `statusFeed`
 * when its store has no status store beside it (a test's stand-in).
 */
import type { StatusFeed } from "./fleet-inputs.js";

/** A feed that never syncs and holds nothing. */
export const EMPTY_STATUS_FEED: StatusFeed = {
  synced: false,
  replicas: () => [],
  onChange: () => () => {},
};
