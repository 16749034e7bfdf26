/**
 * The classification of a change of one of the export controller's own keys
 * against its view and its pending write, table by table, and the kind of
 * repair a write makes. Pure: no store, no clock.
 */
import { describe, expect, it } from "vitest";
import type { ExportedProjection } from "../../services/registrar/export/export-plan.js";
import {
  classifyOwnKeyChange,
  type OwnKeyChange,
  type OwnKeyVerdict,
  REPAIR_KINDS,
  repairKindOf,
} from "../../services/registrar/export/own-key-change.js";

const V1 = "2027-01-15T08:00:00.000000001Z";
const V2 = "2027-01-15T08:00:00.000000002Z";
const put = (digest: string, version: string, seal = ""): OwnKeyChange => ({
  type: "put",
  digest,
  version,
  seal,
});
const del: OwnKeyChange = { type: "delete" };
const known = (digest: string, version: string, seal = ""): ExportedProjection => ({
  digest,
  version,
  seal,
});

describe("classifyOwnKeyChange", () => {
  const cases: [
    string,
    OwnKeyChange,
    ExportedProjection | undefined,
    OwnKeyChange | undefined,
    OwnKeyVerdict,
  ][] = [
    // A write is pending: its own event, or a change it replaces.
    ["the pending put's event", put("a", V2), known("a", V1), put("a", V2), "own"],
    [
      "the pending put's event, before the view has it",
      put("b", V2),
      undefined,
      put("b", V2),
      "own",
    ],
    ["the pending delete's event", del, known("a", V1), del, "own"],
    [
      "a put of the pending content and version, another seal (a forgery of it)",
      put("a", V2, "?k1"),
      known("a", V1, "k1"),
      put("a", V2, "k1"),
      "overtaken",
    ],
    [
      "no write pending: the same content and version with another seal is foreign",
      put("a", V1, ""),
      known("a", V1, "k1"),
      undefined,
      "foreign",
    ],
    [
      "no write pending: the same content, version and seal is unchanged",
      put("a", V1, "k1"),
      known("a", V1, "k1"),
      undefined,
      "unchanged",
    ],
    ["a delete while a delete is pending (same outcome)", del, undefined, del, "own"],
    [
      "a put with the pending digest, another version",
      put("a", V1),
      known("a", V1),
      put("a", V2),
      "overtaken",
    ],
    [
      "a put with the pending version, other content",
      put("x", V2),
      known("a", V1),
      put("a", V2),
      "overtaken",
    ],
    ["a delete while a put is pending", del, known("a", V1), put("a", V2), "overtaken"],
    ["a put while a delete is pending", put("x", V1), known("a", V1), del, "overtaken"],
    // Nothing pending: the view decides.
    ["a put of what the view holds", put("a", V1), known("a", V1), undefined, "unchanged"],
    ["a delete of what the view lacks", del, undefined, undefined, "unchanged"],
    [
      "other content, the view's version (forged)",
      put("x", V1),
      known("a", V1),
      undefined,
      "foreign",
    ],
    ["the view's content, another version", put("a", V2), known("a", V1), undefined, "foreign"],
    ["a put of a service the view lacks", put("a", V1), undefined, undefined, "foreign"],
    ["a delete of a service the view holds", del, known("a", V1), undefined, "foreign"],
  ];
  for (const [name, change, view, expected, verdict] of cases) {
    it(`${name}: ${verdict}`, () => {
      expect(classifyOwnKeyChange(change, view, expected)).toBe(verdict);
    });
  }
});

describe("repairKindOf", () => {
  it("names what a repair undid", () => {
    expect(repairKindOf({ type: "put", isNew: false })).toBe("put");
    expect(repairKindOf({ type: "put", isNew: true })).toBe("delete");
    expect(repairKindOf({ type: "delete" })).toBe("foreign_put");
    expect(REPAIR_KINDS).toEqual(["put", "delete", "foreign_put"]);
  });
});
