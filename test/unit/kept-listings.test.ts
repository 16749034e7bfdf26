/** The listing windows the ConfigService keeps between pages: bounded, least recently used first out, expiring. */
import { describe, expect, it } from "vitest";
import {
  createKeptListings,
  type ListingWindow,
} from "../../services/registrar/service/kept-listings.js";

const window = (more: boolean): ListingWindow => ({ entries: [], more, after: undefined });

describe("kept listings", () => {
  it("keeps at most `capacity` windows, forgetting the least recently used", () => {
    const kept = createKeptListings({ capacity: 2, ttlMs: 1_000, now: () => 0 });
    const a = window(true);
    kept.set("a", a);
    kept.set("b", window(false));
    expect(kept.get("a")).toBe(a); // now "b" is the least recently used
    kept.set("c", window(false));
    expect(kept.size).toBe(2);
    expect(kept.get("b")).toBeUndefined();
    expect(kept.get("a")).toBe(a);
    expect(kept.get("c")).toBeDefined();
  });

  it("forgets a window `ttlMs` after it was last used", () => {
    let now = 0;
    const kept = createKeptListings({ capacity: 4, ttlMs: 100, now: () => now });
    kept.set("a", window(true));
    kept.set("b", window(true));
    now = 90;
    expect(kept.get("a")).toBeDefined(); // used: kept until 190
    now = 150;
    expect(kept.get("b")).toBeUndefined();
    expect(kept.get("a")).toBeDefined();
    now = 400;
    expect(kept.get("a")).toBeUndefined();
    expect(kept.size).toBe(0);
  });
});
