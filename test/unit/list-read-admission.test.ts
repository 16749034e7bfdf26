/**
 * The pure parts of the list read limiter: the admission decision (run,
 * wait, refuse) and the coalescing key of a store read. Table-driven, no
 * timers.
 */
import { describe, expect, it } from "vitest";
import {
  type Admission,
  admitRead,
  DEFAULT_READ_LIMITS,
  type ReadLimits,
} from "../../services/registrar/service/read-admission.js";
import { storeReadKey } from "../../services/registrar/service/read-key.js";
import type { ListOptions } from "../../services/registrar/store/config-store.js";

describe("admitRead", () => {
  const limits: ReadLimits = { concurrency: 2, queue: 3 };
  const cases: [string, number, number, ReadLimits, Admission][] = [
    ["runs when nothing runs", 0, 0, limits, "run"],
    ["runs while a slot is free and nobody waits", 1, 0, limits, "run"],
    ["waits when every slot is taken", 2, 0, limits, "wait"],
    ["never overtakes a read in line, even with a free slot", 1, 1, limits, "wait"],
    ["waits while the line has room", 2, 2, limits, "wait"],
    ["refuses when the line is full", 2, 3, limits, "refuse"],
    ["refuses past a full line however it got there", 5, 9, limits, "refuse"],
    ["with no line, refuses what cannot run", 2, 0, { concurrency: 2, queue: 0 }, "refuse"],
    ["with no line, runs what can", 1, 0, { concurrency: 2, queue: 0 }, "run"],
    ["by default, eight run", 7, 0, DEFAULT_READ_LIMITS, "run"],
    ["by default, the ninth waits", 8, 0, DEFAULT_READ_LIMITS, "wait"],
    ["by default, thirty-two wait", 8, 31, DEFAULT_READ_LIMITS, "wait"],
    ["by default, the forty-first is refused", 8, 32, DEFAULT_READ_LIMITS, "refuse"],
  ];
  for (const [name, running, waiting, given, expected] of cases) {
    it(name, () => {
      expect(admitRead({ running, waiting }, given)).toBe(expected);
    });
  }
});

describe("storeReadKey", () => {
  const base: ListOptions = {
    origin: "hub",
    services: new Set(["a/b", "c/d"]),
    revision: 7,
    after: { origin: "hub", service: "a/b" },
    limit: 5000,
  };
  const same: [string, ListOptions, ListOptions][] = [
    ["services in another order", base, { ...base, services: new Set(["c/d", "a/b"]) }],
    ["no services and an empty set", { revision: 3 }, { revision: 3, services: new Set() }],
    ["a field left out and undefined", { limit: 10 }, { limit: 10, origin: undefined }],
    ["two reads of the latest revision", {}, { revision: undefined }],
  ];
  for (const [name, a, b] of same) {
    it(`keys alike: ${name}`, () => {
      expect(storeReadKey(a)).toBe(storeReadKey(b));
    });
  }
  const different: [string, ListOptions][] = [
    ["another origin", { ...base, origin: "east" }],
    ["every origin", { ...base, origin: undefined }],
    ["other services", { ...base, services: new Set(["a/b"]) }],
    ["every service", { ...base, services: undefined }],
    ["another revision", { ...base, revision: 8 }],
    ["the latest revision", { ...base, revision: undefined }],
    ["another position", { ...base, after: { origin: "hub", service: "c/d" } }],
    ["another position's origin", { ...base, after: { origin: "east", service: "a/b" } }],
    ["the beginning", { ...base, after: undefined }],
    ["another limit", { ...base, limit: 100 }],
    ["no limit", { ...base, limit: undefined }],
    // A name holding the separator of another field cannot pass for two fields.
    ["a service named like two", { ...base, services: new Set(['a/b","c/d']) }],
  ];
  for (const [name, options] of different) {
    it(`keys apart: ${name}`, () => {
      expect(storeReadKey(options)).not.toBe(storeReadKey(base));
    });
  }
});
