/**
 * Who may export: a leadership provider hands out terms, and the export
 * controller writes only during a term, with the term's fence on every
 * write. Two providers: {@link createAlwaysLeader} for the embedded store
 * (one process, always the leader) and `createEtcdLeaderElection` (see
 * etcd-leader-election.ts) for several replicas sharing one etcd.
 */
import type { WriteFence } from "../store/config-store.js";

/** One uninterrupted period of leadership. */
export interface LeaderTerm {
  /** Numbers the terms a provider grants: 1, 2, … */
  readonly id: number;
  /**
   * The fence every write of this term must carry, so that a write still in
   * flight when the term has ended cannot land; undefined when writes need
   * no fence (one process).
   */
  readonly fence: WriteFence | undefined;
  /** Aborted when the term ends, with the reason as a string. */
  readonly signal: AbortSignal;
}

/** A source of leadership terms. */
export interface LeaderElection {
  /** `"always"` (one process) or `"etcd"` (an etcd election with a lease). */
  readonly kind: "always" | "etcd";
  /** The current term, or undefined while this process is not the leader. */
  readonly term: LeaderTerm | undefined;
  /** Starts campaigning. Idempotent; does nothing after `stop()`. */
  start(): void;
  /**
   * Ends the current term (listeners hear it first), resigns so that another
   * replica can take over at once, and stops campaigning. Idempotent.
   */
  stop(): Promise<void>;
  /**
   * Registers a listener called, never synchronously inside a method of the
   * provider, after every change: with the new term when one begins, with
   * undefined when the current one ends. Returns a function that
   * unregisters it.
   */
  onChange(listener: (term: LeaderTerm | undefined) => void): () => void;
  /**
   * Reports that `term` no longer holds (a fenced write was refused). If it is
   * still the current term, it ends at once and the provider campaigns
   * again; otherwise nothing happens.
   */
  relinquish(term: LeaderTerm, reason: string): void;
}

/** The term bookkeeping of a provider; see {@link createTermKeeper}. */
export interface TermKeeper {
  /** The current term, or undefined. */
  readonly current: LeaderTerm | undefined;
  /** Begins a new term with `fence` (ending the current one first) and returns it. */
  begin(fence: WriteFence | undefined): LeaderTerm;
  /** Ends the current term, aborting its signal with `reason`; does nothing without one. */
  end(reason: string): void;
  /** Registers a change listener, as {@link LeaderElection.onChange}. */
  onChange(listener: (term: LeaderTerm | undefined) => void): () => void;
}

/**
 * Creates the listener registry and term bookkeeping the providers share.
 * Listeners are called in a microtask after each change, with the term
 * current at that change.
 */
export function createTermKeeper(): TermKeeper {
  const listeners = new Set<(term: LeaderTerm | undefined) => void>();
  let current: { term: LeaderTerm; abort: AbortController } | undefined;
  let nextId = 1;
  const notify = (term: LeaderTerm | undefined): void => {
    queueMicrotask(() => {
      for (const listener of [...listeners]) listener(term);
    });
  };
  return {
    get current() {
      return current?.term;
    },
    begin(fence) {
      if (current !== undefined) current.abort.abort("a new term began");
      const abort = new AbortController();
      const term: LeaderTerm = { id: nextId++, fence, signal: abort.signal };
      current = { term, abort };
      notify(term);
      return term;
    },
    end(reason) {
      if (current === undefined) return;
      current.abort.abort(reason);
      current = undefined;
      notify(undefined);
    },
    onChange(listener) {
      listeners.add(listener);
      return () => {
        listeners.delete(listener);
      };
    },
  };
}

/**
 * Creates the provider for one process (the embedded store): a term begins
 * at `start()` and lasts until `stop()`. Its terms carry no fence. A
 * relinquished term is replaced by a new one at once (nobody else can lead).
 */
export function createAlwaysLeader(): LeaderElection {
  const keeper = createTermKeeper();
  let state: "idle" | "running" | "stopped" = "idle";
  return {
    kind: "always",
    get term() {
      return keeper.current;
    },
    start() {
      if (state !== "idle") return;
      state = "running";
      keeper.begin(undefined);
    },
    async stop() {
      state = "stopped";
      keeper.end("stopped");
    },
    onChange: keeper.onChange,
    relinquish(term, reason) {
      if (state !== "running" || keeper.current !== term) return;
      keeper.end(reason);
      keeper.begin(undefined);
    },
  };
}
