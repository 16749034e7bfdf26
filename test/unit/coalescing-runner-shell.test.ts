/**
 * The coalescing runner's shell: that it carries out the transitions' effects
 * with real timer calls (on vitest's fake clock), starts runs, hands their
 * outcome back, and resolves `whenIdle()` when it settles. The decisions
 * themselves are tested in coalescing-runner.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { createCoalescingRunner } from "../../services/registrar/export/coalescing-runner.js";

beforeEach(() => {
  vi.useFakeTimers({ now: 0 });
});
afterEach(() => {
  vi.useRealTimers();
});

/** A runner whose runs wait for the test to finish them (with a retry delay or not). */
function harness() {
  let active = true;
  const runs: ((retryInMs: number | undefined) => void)[] = [];
  const runner = createCoalescingRunner({
    run: () => new Promise<number | undefined>((resolve) => runs.push(resolve)),
    active: () => active,
    debounceMs: 50,
    maxDelayMs: 1_000,
  });
  let idle = false;
  const watchIdle = () => {
    idle = false;
    void runner.whenIdle().then(() => {
      idle = true;
    });
  };
  return {
    runner,
    runs,
    setActive(value: boolean) {
      active = value;
    },
    watchIdle,
    get idle() {
      return idle;
    },
    /** Finishes run `i` and waits until the runner has handled its outcome. */
    async finish(i: number, retryInMs?: number) {
      const running = runner.running;
      (runs[i] as (retryInMs: number | undefined) => void)(retryInMs);
      await running;
    },
  };
}

describe("coalescing runner shell", () => {
  it("runs a burst once, after the debounce; whenIdle resolves once that run ends", async () => {
    const h = harness();
    await expect(h.runner.whenIdle()).resolves.toBeUndefined();
    h.runner.request();
    h.watchIdle();
    await vi.advanceTimersByTimeAsync(30);
    h.runner.request();
    await vi.advanceTimersByTimeAsync(49);
    expect(h.runs).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(h.runs).toHaveLength(1);
    expect(h.idle).toBe(false);
    await h.finish(0);
    await vi.advanceTimersByTimeAsync(0);
    expect(h.idle).toBe(true);
    expect(vi.getTimerCount()).toBe(0);
  });

  it("runs exactly once more after a run during which asks arrived", async () => {
    const h = harness();
    h.runner.request(0);
    await vi.advanceTimersByTimeAsync(0);
    h.runner.request();
    h.runner.request();
    await vi.advanceTimersByTimeAsync(500);
    expect(h.runs).toHaveLength(1);
    await h.finish(0);
    await vi.advanceTimersByTimeAsync(50);
    expect(h.runs).toHaveLength(2);
    h.watchIdle();
    await h.finish(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.runs).toHaveLength(2);
    expect(h.idle).toBe(true);
  });

  it("retries after the delay a run asks for, and asks meanwhile add nothing", async () => {
    const h = harness();
    h.runner.request(0);
    await vi.advanceTimersByTimeAsync(0);
    await h.finish(0, 100);
    h.watchIdle();
    h.runner.request(0);
    await vi.advanceTimersByTimeAsync(99);
    expect(h.runs).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(2); // the retry timer, then the run it schedules at once
    expect(h.runs).toHaveLength(2);
    await h.finish(1);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.runs).toHaveLength(2);
    expect(h.idle).toBe(true);
  });

  it("a reset cancels a pending retry: when not active it settles, when active it runs at once", async () => {
    const h = harness();
    h.runner.request(0);
    await vi.advanceTimersByTimeAsync(0);
    await h.finish(0, 100);
    h.watchIdle();
    h.setActive(false);
    h.runner.reset();
    await vi.advanceTimersByTimeAsync(0);
    expect(h.idle).toBe(true);
    expect(vi.getTimerCount()).toBe(0);

    h.runner.request();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(h.runs).toHaveLength(1); // not active: asks do nothing
    h.setActive(true);
    h.runner.request(300);
    h.runner.reset();
    await vi.advanceTimersByTimeAsync(0);
    expect(h.runs).toHaveLength(2);
    expect(vi.getTimerCount()).toBe(0); // the cancelled timer is gone
  });
});
