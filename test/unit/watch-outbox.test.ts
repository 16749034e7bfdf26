import { describe, expect, it } from "vitest";
import { createOutbox, type OutboxItem } from "../../services/registrar/service/watch-outbox.js";

/** An item named by one byte, a change at `change` when given. */
const item = (name: number, change?: number): OutboxItem => ({
  frame: Uint8Array.of(name),
  change,
});
const names = (items: readonly OutboxItem[]) => items.map((i) => i.frame[0]);

/** An outbox over a transport that takes `room` frames before it reports full. */
function harness(maxBacklog: number, room = Number.POSITIVE_INFINITY) {
  const sent: OutboxItem[] = [];
  let left = room;
  const outbox = createOutbox((i) => {
    sent.push(i);
    left--;
    return left > 0;
  }, maxBacklog);
  return {
    outbox,
    sent,
    refill(frames: number) {
      left = frames;
      outbox.drained();
    },
  };
}

describe("watch outbox", () => {
  it("holds what comes during the initial sync and writes it, in order, when the stream goes live", () => {
    const { outbox, sent } = harness(10);
    expect(outbox.push([item(1, 5), item(2, 6)])).toBe(true);
    expect(sent).toEqual([]);
    expect(outbox.idle).toBe(false);
    outbox.goLive(false);
    expect(names(sent)).toEqual([1, 2]);
    expect(outbox.idle).toBe(true);
  });

  it("writes a change to a live, idle stream in the push itself", () => {
    const { outbox, sent } = harness(10);
    outbox.goLive(false);
    outbox.push([item(7, 9)]);
    expect(names(sent)).toEqual([7]);
  });

  it("stops at a full transport and writes the rest when it drains", () => {
    const { outbox, sent, refill } = harness(10, 2);
    outbox.goLive(false);
    outbox.push([item(1), item(2), item(3), item(4)]);
    expect(names(sent)).toEqual([1, 2]);
    expect(outbox.idle).toBe(false);
    refill(10);
    expect(names(sent)).toEqual([1, 2, 3, 4]);
    expect(outbox.idle).toBe(true);
  });

  it("waits for a drain when the initial sync's last write found the transport full", () => {
    const { outbox, sent, refill } = harness(10);
    outbox.push([item(1)]);
    outbox.goLive(true);
    expect(sent).toEqual([]);
    refill(10);
    expect(names(sent)).toEqual([1]);
  });

  it.each([
    { name: "waiting ones", live: false, completed: 0, pushes: [3, 1], overflows: true },
    { name: "written but not out", live: true, completed: 0, pushes: [3, 1], overflows: true },
    { name: "exactly the bound", live: true, completed: 0, pushes: [2, 1], overflows: false },
    {
      name: "ones out no longer count",
      live: true,
      completed: 2,
      pushes: [3, 1],
      overflows: false,
    },
  ])("overflows past maxBacklog frames behind: $name", ({ live, completed, pushes, overflows }) => {
    const { outbox } = harness(3);
    if (live) outbox.goLive(false);
    let n = 0;
    const [first = 0, second = 0] = pushes;
    outbox.push(Array.from({ length: first }, () => item(n++)));
    for (let i = 0; i < completed; i++) outbox.completed();
    const ok = outbox.push(Array.from({ length: second }, () => item(n++)));
    expect(ok).toBe(!overflows);
    expect(outbox.overflowed).toBe(overflows);
  });

  it("writes nothing more once it overflowed", () => {
    const { outbox, sent, refill } = harness(1, 1);
    outbox.goLive(false);
    outbox.push([item(1)]);
    expect(outbox.push([item(2), item(3)])).toBe(false);
    refill(10);
    outbox.flushAll();
    expect(names(sent)).toEqual([1]);
    expect(outbox.push([item(4)])).toBe(false);
  });

  it("reports each frame out in the order written, with its change", () => {
    const { outbox } = harness(10);
    outbox.goLive(false);
    outbox.push([item(1, 11), item(2), item(3, 13)]);
    expect(outbox.behind).toBe(3);
    expect(
      [outbox.completed(), outbox.completed(), outbox.completed()].map((i) => i?.change),
    ).toEqual([11, undefined, 13]);
    expect(outbox.completed()).toBeUndefined();
    expect(outbox.behind).toBe(0);
  });

  it("flushAll writes the whole backlog past a full transport", () => {
    const { outbox, sent } = harness(10, 1);
    outbox.goLive(false);
    outbox.push([item(1), item(2), item(3)]);
    expect(names(sent)).toEqual([1]);
    outbox.flushAll();
    expect(names(sent)).toEqual([1, 2, 3]);
  });

  it("keeps order across thousands of frames that wait and drain in small steps", () => {
    const { outbox, sent, refill } = harness(10_000, 1);
    outbox.goLive(false);
    const all = Array.from({ length: 3000 }, (_, i) => item(i % 256));
    outbox.push(all);
    while (sent.length < all.length) refill(7);
    expect(sent).toEqual(all);
  });
});
