import { describe, expect, it } from "vitest";
import {
  createSubscribers,
  SubscriberFailedError,
} from "../../services/registrar/cache/cache-subscribers.js";
import type { CacheEvent, ChangeRecord } from "../../services/registrar/cache/projection-index.js";
import { createSilentLogger } from "../../services/runtime/logger.js";

const deleteOf = (service: string, revision: number): ChangeRecord => {
  const event: CacheEvent = { type: "delete", origin: "hub", service, revision };
  return { revision, raw: event, effective: event };
};

describe("cache subscribers", () => {
  it("feeds each subscriber the events of its services, and closes one whose callback throws, telling it why", () => {
    const subscribers = createSubscribers(createSilentLogger());
    const good: string[] = [];
    const closed: Error[] = [];
    subscribers.add({
      view: "all",
      onEvents: (events) => good.push(...events.map((e) => `${e.service}@${e.revision}`)),
      onClose: () => good.push("closed"),
    });
    subscribers.add({
      view: "all",
      services: new Set(["ns/a"]),
      onEvents: () => {
        throw new Error("encoding failed");
      },
      onClose: (error) => closed.push(error),
    });
    subscribers.publish([deleteOf("ns/b", 5)]);
    expect(subscribers.size).toBe(2);
    subscribers.publish([deleteOf("ns/a", 6)]);
    expect(subscribers.size).toBe(1);
    expect(closed).toHaveLength(1);
    expect(closed[0]).toBeInstanceOf(SubscriberFailedError);
    expect(closed[0]?.message).toMatch(/encoding failed/);
    subscribers.publish([deleteOf("ns/a", 7)]);
    expect(closed).toHaveLength(1);
    expect(good).toEqual(["ns/b@5", "ns/a@6", "ns/a@7"]);
  });

  it("survives a subscriber whose onClose throws too, and closes the rest silently on closeAll without an error", () => {
    const subscribers = createSubscribers(createSilentLogger());
    const calls: string[] = [];
    subscribers.add({
      view: "all",
      onEvents: () => {
        throw new Error("boom");
      },
      onClose: () => {
        throw new Error("boom again");
      },
    });
    subscribers.add({
      view: "all",
      onEvents: (events) => calls.push(`events:${events.length}`),
      onClose: () => calls.push("closed"),
    });
    expect(() => subscribers.publish([deleteOf("ns/a", 2)])).not.toThrow();
    expect(calls).toEqual(["events:1"]);
    subscribers.closeAll(undefined);
    expect(subscribers.size).toBe(0);
    expect(calls).toEqual(["events:1"]);
  });
});
