/**
 * The etcd election's pure rules: lease and keep-alive timing, the retry
 * schedule, the campaign key, and who leads given etcd's answers. No etcd,
 * no timers.
 */
import { describe, expect, it } from "vitest";
import {
  type CampaignTxnResult,
  campaignCreateRevision,
  campaignKey,
  electionBackoffOptions,
  keepAliveIntervalMs,
  keepAliveStalled,
  leaseTtlSeconds,
  leaseValidUntil,
  type Predecessor,
  type PredecessorListing,
  predecessorToWaitFor,
} from "../../services/registrar/export/etcd-election-rules.js";
import { createBackoff } from "../../services/runtime/backoff.js";

describe("lease timing", () => {
  const ttls: [number, number][] = [
    [10_000, 10],
    [2_000, 2],
    [1_500, 2],
    [1, 1],
    [0, 1],
    [-3_000, 1],
  ];
  for (const [ttlMs, seconds] of ttls) {
    it(`asks for a ${seconds} s lease for a TTL of ${ttlMs} ms`, () => {
      expect(leaseTtlSeconds(ttlMs)).toBe(seconds);
    });
  }

  const intervals: [number, number][] = [
    [10_000, 10_000 / 3],
    [3_000, 1_000],
    [300, 100],
    [90, 100],
  ];
  for (const [ttlMs, interval] of intervals) {
    it(`renews a ${ttlMs} ms lease every ${interval} ms`, () => {
      expect(keepAliveIntervalMs(ttlMs)).toBe(interval);
    });
  }

  const stalls: [string, number | undefined, number, boolean][] = [
    ["every keep-alive answered", undefined, 50_000, false],
    ["the oldest unanswered one waited less than an interval", 10_000, 10_999, false],
    ["it waited a whole interval (1 s for a 3 s TTL)", 10_000, 11_000, true],
    ["it waited longer", 10_000, 12_500, true],
  ];
  for (const [name, oldest, now, stalled] of stalls) {
    it(`takes a keep-alive stream as ${stalled ? "stalled" : "alive"} when ${name}`, () => {
      expect(keepAliveStalled(oldest, now, 3_000)).toBe(stalled);
    });
  }

  const answers: [string, number, number, string, number | undefined][] = [
    ["extends from when the keep-alive was sent", 10_000, 9_000, "2", 11_000],
    ["never shortens the validity", 12_000, 9_000, "2", 12_000],
    ["takes etcd's TTL, not the one asked for", 10_000, 9_000, "5", 14_000],
    ["is lost when etcd answers TTL 0", 10_000, 9_000, "0", undefined],
  ];
  for (const [name, validUntil, sentAt, ttl, expected] of answers) {
    it(`a keep-alive answer ${name}`, () => {
      expect(leaseValidUntil(validUntil, sentAt, ttl)).toBe(expected);
    });
  }
});

describe("retry schedule", () => {
  const caps: [number, number][] = [
    [1, 1_000],
    [2, 2_000],
    [5, 5_000],
    [10, 5_000],
  ];
  for (const [ttlSeconds, maxMs] of caps) {
    it(`starts at 100 ms and caps at ${maxMs} ms for a ${ttlSeconds} s lease`, () => {
      expect(electionBackoffOptions(ttlSeconds, undefined)).toEqual({ initialMs: 100, maxMs });
    });
  }

  it("passes the jitter source on and doubles up to the cap", () => {
    const random = () => 0.999_999;
    const options = electionBackoffOptions(2, random);
    expect(options.random).toBe(random);
    const backoff = createBackoff(options);
    const delays = Array.from({ length: 7 }, () => Math.round(backoff.next()));
    expect(delays).toEqual([100, 200, 400, 800, 1_600, 2_000, 2_000]);
  });
});

describe("campaign", () => {
  const keys: [string, string, string][] = [
    ["/aether/v1/election/east/export", "1", "/aether/v1/election/east/export/1"],
    ["e", "255", "e/ff"],
    ["e", "7587869443232497418", "e/694d870e6de9ff0a"],
  ];
  for (const [name, leaseId, key] of keys) {
    it(`names the key of lease ${leaseId} ${key}`, () => {
      expect(campaignKey(name, leaseId)).toBe(key);
    });
  }

  const range = (createRevision: string) => ({
    response_range: { kvs: [{ create_revision: createRevision }] },
  });
  const results: [string, CampaignTxnResult, number | undefined][] = [
    [
      "the created key's revision",
      { succeeded: true, header: { revision: "41" }, responses: [] },
      41,
    ],
    [
      "the existing key's creation revision",
      { succeeded: false, header: { revision: "41" }, responses: [range("17")] },
      17,
    ],
    [
      "nothing when the key vanished",
      {
        succeeded: false,
        header: { revision: "41" },
        responses: [{ response_range: { kvs: [] } }],
      },
      undefined,
    ],
    [
      "nothing without a range response",
      { succeeded: false, header: { revision: "41" }, responses: [] },
      undefined,
    ],
    [
      "nothing for a revision that is not a number",
      { succeeded: true, header: { revision: "x" }, responses: [] },
      undefined,
    ],
  ];
  for (const [name, result, expected] of results) {
    it(`takes ${name}`, () => {
      expect(campaignCreateRevision(result)).toBe(expected);
    });
  }
});

describe("who leads", () => {
  const key = Buffer.from("e/1a");
  const listings: [string, PredecessorListing, Predecessor | undefined][] = [
    ["leads when no earlier key is left", { header: { revision: "30" }, kvs: [] }, undefined],
    [
      "waits for the newest earlier key, watching from after the listing",
      { header: { revision: "30" }, kvs: [{ key }] },
      { key, startRevision: 31 },
    ],
  ];
  for (const [name, listing, expected] of listings) {
    it(name, () => {
      expect(predecessorToWaitFor(listing)).toEqual(expected);
    });
  }
});
