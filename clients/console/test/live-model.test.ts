/** The Live view's model: the stream's state in words, and the rows of the latest changes. */
import { describe, expect, it } from "vitest";
import { initialLiveState, type LiveChange, type LiveState } from "../src/live/live-feed.js";
import { changeRows, MAX_CHANGE_ROWS, summarizeStream } from "../src/views/live/live-model.js";

const T0 = Date.UTC(2026, 11, 3, 12, 0, 1, 250);
const T1 = Date.UTC(2026, 11, 3, 12, 5, 30, 0);

function state(patch: Partial<LiveState>): LiveState {
  return { ...initialLiveState(T0), ...patch };
}

describe("summarizeStream", () => {
  const cases: [string, Partial<LiveState>, { headline: string; resumption: string }][] = [
    [
      "connecting the first time",
      {},
      { headline: "Connecting since 12:00:01 UTC…", resumption: "" },
    ],
    [
      "live, never down",
      { connection: "live", synced: true },
      { headline: "Live since 12:00:01 UTC.", resumption: "" },
    ],
    [
      "down with the error",
      { connection: "down", synced: true, error: "unavailable: connection refused" },
      { headline: "Down since 12:00:01 UTC: unavailable: connection refused", resumption: "" },
    ],
    [
      "down without a message",
      { connection: "down" },
      { headline: "Down since 12:00:01 UTC.", resumption: "" },
    ],
    [
      "reconnecting after a snapshot",
      { connection: "connecting", synced: true },
      { headline: "Reconnecting since 12:00:01 UTC…", resumption: "" },
    ],
    [
      "resumed by resume",
      { connection: "live", synced: true, resumedAt: T1, resumed: true },
      {
        headline: "Live since 12:00:01 UTC.",
        resumption:
          "Resumed at 12:05:30 UTC by resume (the changes missed meanwhile were replayed).",
      },
    ],
    [
      "resumed with a fresh snapshot",
      { connection: "live", synced: true, resumedAt: T1, resumed: false },
      {
        headline: "Live since 12:00:01 UTC.",
        resumption:
          "Resumed at 12:05:30 UTC with a fresh snapshot (the missed changes could not be replayed).",
      },
    ],
  ];
  it.each(cases)("%s", (_name, patch, expected) => {
    expect(summarizeStream(state(patch))).toMatchObject({
      connection: patch.connection ?? "connecting",
      ...expected,
    });
  });

  it("gives the revision as digits, 0 before the first event", () => {
    expect(summarizeStream(state({})).revision).toBe("0");
    expect(summarizeStream(state({ revision: 12345678901234567890n })).revision).toBe(
      "12345678901234567890",
    );
  });
});

function change(patch: Partial<LiveChange>): LiveChange {
  return {
    type: "upsert",
    service: "shop/checkout",
    origin: "hub",
    version: "v2",
    receivedAt: T1,
    ...patch,
  };
}

describe("changeRows", () => {
  it("keeps the order (newest first), links services, not @mesh, and shows a delete without a version", () => {
    const rows = changeRows([
      change({ service: "shop/cart", version: "7" }),
      change({ type: "delete", version: "" }),
      change({ service: "@mesh", version: "3", origin: "hub" }),
    ]);
    expect(rows.map((r) => [r.time, r.service, r.href, r.origin, r.version, r.type])).toEqual([
      ["12:05:30.000", "shop/cart", "#/service/shop/cart", "hub", "7", "upsert"],
      ["12:05:30.000", "shop/checkout", "#/service/shop/checkout", "hub", "-", "delete"],
      ["12:05:30.000", "@mesh", undefined, "hub", "3", "upsert"],
    ]);
  });

  it("encodes a service's path segments in its link", () => {
    expect(changeRows([change({ service: "a b/c?d" })])[0]?.href).toBe("#/service/a%20b/c%3Fd");
  });

  it("is bounded (MAX_CHANGE_ROWS by default, or the limit given)", () => {
    const many = Array.from({ length: MAX_CHANGE_ROWS + 10 }, (_, i) =>
      change({ version: String(i) }),
    );
    expect(changeRows(many)).toHaveLength(MAX_CHANGE_ROWS);
    expect(changeRows(many, 3).map((r) => r.version)).toEqual(["0", "1", "2"]);
  });

  it("gives every row a distinct key, even for identical changes", () => {
    const rows = changeRows([change({}), change({}), change({ version: "v3" })]);
    expect(new Set(rows.map((r) => r.key)).size).toBe(3);
  });
});
