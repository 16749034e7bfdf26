/**
 * How the config cache's follow judges failed pings: at once when the
 * process was idle while it waited (a frozen or lost store), but pinged again
 * at once, at most the grace's times in a row, when the process was too busy to have
 * read an answer. A store answering again resets the count.
 */
import { describe, expect, it } from "vitest";
import { followStore } from "../../services/registrar/cache/store-follow.js";
import { StoreUnavailableError } from "../../services/registrar/store/config-store.js";
import { DEFAULT_STARVATION_GRACE } from "../../services/registrar/store/starvation-grace.js";

/** How many failures in a row a busy process excuses by default. */
const GRACE = DEFAULT_STARVATION_GRACE.maxGrace;
/** "etcd ping N took over 1000 ms" for N in first..last. */
const failures = (first: number, last: number) =>
  Array.from({ length: last - first + 1 }, (_, i) => `etcd ping ${first + i} took over 1000 ms`);

/** A store whose watch never reports and whose pings answer as `answers` says, in turn (then fail). */
function pingedStore(answers: boolean[]) {
  let pings = 0;
  return {
    get pings() {
      return pings;
    },
    store: {
      watch: () => ({ cancel: async () => {} }),
      ping: async () => {
        const ok = answers[pings++] ?? false;
        if (!ok) throw new StoreUnavailableError(`etcd ping ${pings} took over 1000 ms`);
      },
    },
  };
}

/**
 * Follows `store` with pings every 5 ms, the event loop reported as `busy` over every ping,
 * the store lost once pings have failed for `lossAfterMs` (default 0: at the first that counts).
 */
function follow(
  store: ReturnType<typeof pingedStore>["store"],
  busy: () => number,
  lossAfterMs = 0,
) {
  const excused: string[] = [];
  const ended = followStore(store, 0, {
    pingIntervalMs: 5,
    lossAfterMs,
    onEvents: () => {},
    onInterruptible: () => {},
    measureBusy: () => busy,
    onExcused: (error) => excused.push(error.message),
  });
  return { ended, excused };
}

describe("the follow's health pings", () => {
  it("count the first failure while the process was idle: the store is lost at once", async () => {
    const pinged = pingedStore([true, true, false]);
    const { ended, excused } = follow(pinged.store, () => 0.01);
    expect((await ended)?.message).toBe("etcd ping 3 took over 1000 ms");
    expect(pinged.pings).toBe(3);
    expect(excused).toEqual([]);
  });

  it("excuse the grace's failures in a row while the process was busy, pinging again at once, and count the next", async () => {
    const pinged = pingedStore([]);
    const { ended, excused } = follow(pinged.store, () => 0.95);
    expect((await ended)?.message).toBe(`etcd ping ${GRACE + 1} took over 1000 ms`);
    expect(excused).toEqual(failures(1, GRACE));
    expect(pinged.pings).toBe(GRACE + 1);
  });

  it("forget the excuses once the store answers", async () => {
    // Busy throughout: fail, answer, then fail on: the failures after the answer are a new run.
    const pinged = pingedStore([false, true]);
    const { ended, excused } = follow(pinged.store, () => 0.95);
    expect((await ended)?.message).toBe(`etcd ping ${GRACE + 3} took over 1000 ms`);
    expect(excused).toEqual([...failures(1, 1), ...failures(3, GRACE + 2)]);
  });

  it("ping again shortly while pings have failed for less than lossAfterMs (a leader election), and forget the run once the store answers", async () => {
    // Idle throughout: fail, fail, answer, then fail on until 60 ms of failures.
    const pinged = pingedStore([false, false, true]);
    const started = Date.now();
    const { ended, excused } = follow(pinged.store, () => 0.01, 60);
    const error = await ended;
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect(pinged.pings).toBeGreaterThan(4);
    expect(Date.now() - started).toBeGreaterThanOrEqual(60);
    expect(excused).toEqual([]);
  });

  it("count a failure once the process is idle again, excused or not before", async () => {
    const loads = [0.99, 0.1];
    let ping = 0;
    const pinged = pingedStore([]);
    const { ended, excused } = follow(pinged.store, () => loads[Math.min(ping++, 1)] as number);
    expect((await ended)?.message).toBe("etcd ping 2 took over 1000 ms");
    expect(excused).toHaveLength(1);
  });
});
