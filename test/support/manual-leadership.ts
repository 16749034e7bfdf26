/** A leadership provider that a test drives by hand. */
import {
  createTermKeeper,
  type LeaderElection,
  type LeaderTerm,
} from "../../services/registrar/export/leader-election.js";
import type { WriteFence } from "../../services/registrar/store/config-store.js";

/** A {@link LeaderElection} whose terms a test begins and ends. */
export interface ManualLeadership extends LeaderElection {
  /** Begins a term (ending the current one, if any) with an optional fence. */
  elect(fence?: WriteFence): LeaderTerm;
  /** Ends the current term. */
  depose(reason?: string): void;
  /** Every call of `relinquish` that ended a term, in order. */
  readonly relinquished: { term: number; reason: string }[];
  /** Whether `start()` and `stop()` were called. */
  readonly calls: { start: number; stop: number };
}

/** Creates a provider that is never the leader until the test calls `elect`. */
export function createManualLeadership(): ManualLeadership {
  const keeper = createTermKeeper();
  const relinquished: { term: number; reason: string }[] = [];
  const calls = { start: 0, stop: 0 };
  return {
    kind: "etcd",
    relinquished,
    calls,
    get term() {
      return keeper.current;
    },
    start() {
      calls.start++;
    },
    async stop() {
      calls.stop++;
      keeper.end("stopped");
    },
    onChange: keeper.onChange,
    relinquish(term, reason) {
      if (keeper.current !== term) return;
      relinquished.push({ term: term.id, reason });
      keeper.end(reason);
    },
    elect: (fence) => keeper.begin(fence),
    depose: (reason = "deposed") => keeper.end(reason),
  };
}
