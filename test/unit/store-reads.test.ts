/**
 * The coalesced, limited store reads of list requests, over a store whose
 * reads finish when the test says: identical reads are made once, at most
 * `concurrency` run, at most `queue` wait (in arrival order, none
 * overtaking), the rest are refused at once with retry advice, and a read
 * that waits too long is refused too. Also the barrier that confirms the
 * store answers before the cache serves.
 */
import { describe, expect, it } from "vitest";
import { createStoreBarrier } from "../../services/registrar/service/store-barrier.js";
import {
  createStoreReads,
  ListReadsBusyError,
  type ReadOutcome,
} from "../../services/registrar/service/store-reads.js";
import type { ListOptions, ListResult } from "../../services/registrar/store/config-store.js";
import { waitFor } from "../support/wait.js";

/** A promise and the functions that settle it. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: Error) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A store whose every list waits until the test finishes it; records what was read. */
function heldStore() {
  const held: { options: ListOptions; done: ReturnType<typeof deferred<ListResult>> }[] = [];
  let running = 0;
  let most = 0;
  return {
    held,
    get most() {
      return most;
    },
    store: {
      list: async (options?: ListOptions) => {
        running++;
        most = Math.max(most, running);
        const done = deferred<ListResult>();
        held.push({ options: options ?? {}, done });
        try {
          return await done.promise;
        } finally {
          running--;
        }
      },
    },
  };
}

const result = (revision: number): ListResult => ({ entries: [], revision, more: false });
const settled = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

describe("the store reads of list requests", () => {
  it("makes identical reads once, and every asker gets the one answer", async () => {
    const { store, held } = heldStore();
    const outcomes: ReadOutcome[] = [];
    const reads = createStoreReads({
      store,
      limits: { concurrency: 2, queue: 2 },
      waitMs: 60_000,
      onOutcome: (o) => outcomes.push(o),
    });
    const asked = Array.from({ length: 50 }, () =>
      reads.list({ revision: 5, services: new Set(["a/b"]) }),
    );
    await waitFor(() => held.length === 1, 1_000, "the one read");
    held[0]?.done.resolve(result(5));
    const answers = await Promise.all(asked);
    for (const answer of answers) expect(answer).toBe(answers[0]);
    expect(answers[0]).toEqual(result(5));
    expect(outcomes.filter((o) => o === "read")).toHaveLength(1);
    expect(outcomes.filter((o) => o === "coalesced")).toHaveLength(49);
    // Once answered, the same question is asked again.
    const again = reads.list({ revision: 5, services: new Set(["a/b"]) });
    await waitFor(() => held.length === 2, 1_000, "a new read");
    held[1]?.done.resolve(result(5));
    await again;
  });

  it("runs at most `concurrency`, lines up at most `queue` in order, and refuses the rest at once with retry advice", async () => {
    const held = heldStore();
    const outcomes: ReadOutcome[] = [];
    const reads = createStoreReads({
      store: held.store,
      limits: { concurrency: 2, queue: 3 },
      waitMs: 60_000,
      onOutcome: (o) => outcomes.push(o),
    });
    const asked = Array.from({ length: 8 }, (_, i) => settled(reads.list({ revision: i + 1 })));
    await waitFor(() => held.held.length === 2, 1_000, "two reads running");
    expect([reads.running, reads.waiting]).toEqual([2, 3]);
    // Three refused at once, before any read finished.
    const refused = await Promise.all(asked.slice(5));
    for (const r of refused) {
      expect(r.ok).toBe(false);
      expect(r.ok ? undefined : r.error).toBeInstanceOf(ListReadsBusyError);
      expect(r.ok ? 0 : (r.error as ListReadsBusyError).retryAfterMs).toBe(1_000);
    }
    // Each finished read hands its slot to the first in line.
    for (let finished = 0; finished < 5; finished++) {
      const next = held.held[finished];
      next?.done.resolve(result(next.options.revision as number));
      await waitFor(
        () => held.held.length === Math.min(5, finished + 3),
        1_000,
        `read ${finished + 3} to start`,
      );
    }
    const answered = await Promise.all(asked.slice(0, 5));
    expect(answered.map((a) => (a.ok ? a.value.revision : -1))).toEqual([1, 2, 3, 4, 5]);
    expect(held.held.map((h) => h.options.revision)).toEqual([1, 2, 3, 4, 5]);
    expect(held.most).toBe(2);
    expect(outcomes.filter((o) => o === "refused")).toHaveLength(3);
    expect(outcomes.filter((o) => o === "read")).toHaveLength(5);
    expect([reads.running, reads.waiting]).toEqual([0, 0]);
  });

  it("refuses a read that waited `waitMs` for a slot, and keeps the line going", async () => {
    const held = heldStore();
    const reads = createStoreReads({
      store: held.store,
      limits: { concurrency: 1, queue: 5 },
      waitMs: 30,
    });
    const first = reads.list({ revision: 1 });
    const second = settled(reads.list({ revision: 2 }));
    const outcome = await second;
    expect(outcome.ok ? undefined : (outcome.error as Error).message).toMatch(
      /\(waited 30 ms for one of 1 reads\); retry after 1s$/,
    );
    expect(reads.waiting).toBe(0);
    held.held[0]?.done.resolve(result(1));
    await first;
    const third = reads.list({ revision: 3 });
    await waitFor(() => held.held.length === 2, 1_000, "the next read");
    held.held[1]?.done.resolve(result(3));
    expect((await third).revision).toBe(3);
  });

  it("passes a store error to every asker, and frees the slot", async () => {
    const held = heldStore();
    const reads = createStoreReads({
      store: held.store,
      limits: { concurrency: 1, queue: 0 },
      waitMs: 60_000,
    });
    const asked = [settled(reads.list({})), settled(reads.list({}))];
    await waitFor(() => held.held.length === 1, 1_000, "the read");
    held.held[0]?.done.reject(new Error("etcd range failed"));
    for (const r of await Promise.all(asked)) {
      expect(r.ok ? undefined : (r.error as Error).message).toBe("etcd range failed");
    }
    expect(reads.running).toBe(0);
    const next = reads.list({});
    await waitFor(() => held.held.length === 2, 1_000, "the next read");
    held.held[1]?.done.resolve(result(9));
    expect((await next).revision).toBe(9);
  });
});

describe("the store barrier", () => {
  it("answers every caller with a ping that started after it came, one ping at a time", async () => {
    const pings: ReturnType<typeof deferred<void>>[] = [];
    let running = 0;
    let most = 0;
    const barrier = createStoreBarrier(async () => {
      running++;
      most = Math.max(most, running);
      const ping = deferred<void>();
      pings.push(ping);
      try {
        await ping.promise;
      } finally {
        running--;
      }
    });
    let done = 0;
    const early = barrier.confirm().then(() => done++);
    // Callers during the first ping wait for the second, however many there are.
    const later = Array.from({ length: 100 }, () => barrier.confirm().then(() => done++));
    await waitFor(() => pings.length === 1, 1_000, "the first ping");
    pings[0]?.resolve();
    await early;
    expect(done).toBe(1);
    await waitFor(() => pings.length === 2, 1_000, "the second ping");
    pings[1]?.resolve();
    await Promise.all(later);
    expect(done).toBe(101);
    expect(most).toBe(1);
    expect(pings).toHaveLength(2);
  });

  it("rejects the callers of a failed ping with its error, and pings again for the next", async () => {
    let fail = true;
    let pings = 0;
    const barrier = createStoreBarrier(async () => {
      pings++;
      if (fail) throw new Error("etcd ping took over 1000 ms");
    });
    await expect(barrier.confirm()).rejects.toThrow(/took over 1000 ms/);
    fail = false;
    await barrier.confirm();
    expect(pings).toBe(2);
  });
});
