/**
 * Empty fleet inputs: an {@link AgentReportsView} with no agents (what the
 * publisher reads until the registrar tracks its agents' reports) and a
 * {@link StatusFeed} that never syncs (a registrar whose store has no
 * status store, such as a test's stand-in).
 */
import type { AgentReportsView, StatusFeed } from "./fleet-inputs.js";

const NONE = { inSync: 0, behind: 0, rejecting: 0, notReady: 0 } as const;

/** No agent reports anything; listeners are never called. */
export const EMPTY_AGENT_REPORTS: AgentReportsView = {
  reportedServices: () => [],
  serviceAgents: () => ({ tally: NONE, rejections: [] }),
  totals: () => NONE,
  onChange: () => () => {},
};

/** A feed that never syncs and holds nothing. */
export const EMPTY_STATUS_FEED: StatusFeed = {
  synced: false,
  replicas: () => [],
  onChange: () => () => {},
};
