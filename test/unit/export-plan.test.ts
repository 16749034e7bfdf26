/**
 * The export plan, table by table: the view of what is stored, the diff of
 * projections against it in write batches (by count and by bytes), the
 * unexports held while the source reports problems, and version issuing.
 * Pure: no store, no clock, no timers.
 */
import { toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../services/common/projection-content.js";
import { formatVersion } from "../../services/common/projection-version.js";
import {
  BATCH_ENTRY_OVERHEAD,
  type BatchLimits,
  changedBatches,
  contentDigest,
  DEFAULT_MAX_FUTURE_NANOS,
  type ExportView,
  MAX_BATCH_BYTES,
  nextVersion,
  planUnexports,
  STORE_BATCH_LIMITS,
  storedView,
} from "../../services/registrar/export/export-plan.js";
import { MAX_WRITE_BATCH } from "../../services/registrar/store/config-store.js";
import { makeProjection } from "../support/projections.js";

const T0 = 1_800_000_000_000_000_000n;

/** A projection of `service` whose content grows with `padding` (a longer backend name). */
function projection(service: string, padding = 0): ServiceConfigProjection {
  return makeProjection(service, { backend: `pad/${"x".repeat(padding)}` });
}

/** The view entry of a stored `p`: its content digest and `version`. */
function stored(p: ServiceConfigProjection, version = formatVersion(T0), seal = "") {
  return { digest: contentDigest(projectionContent(p)), version, seal };
}

/** What a batch holds, as `service` (new) or `service*` (changed). */
function names(batch: readonly { projection: ServiceConfigProjection; isNew: boolean }[]) {
  return batch.map(({ projection, isNew }) => `${projection.service}${isNew ? "" : "*"}`);
}

/** The batches `changedBatches` yields for `projections` against `view`, as {@link names}. */
function batchesOf(
  projections: readonly ServiceConfigProjection[],
  view: ExportView = new Map(),
  limits?: BatchLimits,
): string[][] {
  return [...changedBatches([...projections], view, limits)].map(names);
}

/** The bytes `changedBatches` counts for `p`. */
const size = (p: ServiceConfigProjection) => projectionContent(p).length + BATCH_ENTRY_OVERHEAD;

describe("export plan: content digest and the stored view", () => {
  it("digests content as base64url SHA-256", () => {
    expect(contentDigest(new Uint8Array())).toBe("47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU");
    const a = projectionContent(projection("shop/a"));
    expect(contentDigest(a)).toBe(contentDigest(a.slice()));
    expect(contentDigest(a)).not.toBe(contentDigest(projectionContent(projection("shop/a", 1))));
  });

  const p = projection("shop/a");
  const cases: [string, Uint8Array][] = [
    [
      "stamped bytes: the content is the value without version and origin",
      toBinary(ServiceConfigProjectionSchema, {
        ...p,
        version: formatVersion(T0 + 7n),
        originCluster: "hub",
      }),
    ],
    ["bytes that do not parse: the content of the decoded projection", new Uint8Array([0xff])],
  ];
  for (const [name, value] of cases) {
    it(`reads each entry's digest and version: ${name}`, () => {
      const version = formatVersion(T0 + 7n);
      const view = storedView([{ service: "shop/a", value, version, projection: p }]);
      expect([...view]).toEqual([["shop/a", stored(p, version)]]);
    });
  }
});

describe("export plan: the diff against the view", () => {
  const a = projection("shop/a");
  const b = projection("shop/b");
  const bChanged = projection("shop/b", 3);
  const c = projection("shop/c");
  const cases: {
    name: string;
    view: [string, ServiceConfigProjection][];
    projections: ServiceConfigProjection[];
    batches: string[][];
  }[] = [
    {
      name: "an empty view: every projection is new",
      view: [],
      projections: [a, b],
      batches: [["shop/a", "shop/b"]],
    },
    {
      name: "unchanged content writes nothing",
      view: [
        ["shop/a", a],
        ["shop/b", b],
      ],
      projections: [a, b],
      batches: [],
    },
    {
      name: "new, changed and unchanged together: only new and changed, in order",
      view: [
        ["shop/a", a],
        ["shop/b", b],
      ],
      projections: [a, bChanged, c],
      batches: [["shop/b*", "shop/c"]],
    },
    {
      name: "version and origin are not content",
      view: [["shop/a", { ...a, version: formatVersion(T0), originCluster: "hub" }]],
      projections: [a],
      batches: [],
    },
    { name: "no projections: no batches", view: [["shop/a", a]], projections: [], batches: [] },
  ];
  for (const { name, view, projections, batches } of cases) {
    it(name, () => {
      const known: ExportView = new Map(view.map(([service, p]) => [service, stored(p)]));
      expect(batchesOf(projections, known)).toEqual(batches);
    });
  }

  it("hands out each projection with its content bytes and their digest", () => {
    const [batch] = [...changedBatches([bChanged], new Map([["shop/b", stored(b)]]))];
    const content = projectionContent(bChanged);
    expect(batch).toEqual([
      {
        projection: bChanged,
        content,
        digest: contentDigest(content),
        isNew: false,
        resealVersion: undefined,
      },
    ]);
  });

  it("hands out a projection stored with another seal again, under its stored version", () => {
    const view = new Map([
      ["shop/a", stored(a, formatVersion(T0), "old-key")],
      ["shop/b", stored(b, formatVersion(T0), "new-key")],
    ]);
    const [batch] = [...changedBatches([a, b], view, STORE_BATCH_LIMITS, "new-key")];
    expect(batch?.map((c) => [c.projection.service, c.isNew, c.resealVersion])).toEqual([
      ["shop/a", false, formatVersion(T0)],
    ]);
    // Unsigned wanted: a signed value is written again unsigned.
    const unsigned = [...changedBatches([a, b], view, STORE_BATCH_LIMITS, "")];
    expect(unsigned.flat().map((c) => c.projection.service)).toEqual(["shop/a", "shop/b"]);
  });

  it("lets go of each projection as it takes it, skipping slots already empty", () => {
    const pending: (ServiceConfigProjection | undefined)[] = [
      a,
      undefined,
      b,
      c,
      projection("shop/d"),
    ];
    const batches = changedBatches(pending, new Map(), { maxCount: 1, maxBytes: MAX_BATCH_BYTES });
    expect(names(batches.next().value ?? [])).toEqual(["shop/a"]);
    // The next projection was read to close the batch; the rest are still pending.
    expect(pending.map((p) => p?.service)).toEqual([
      undefined,
      undefined,
      undefined,
      "shop/c",
      "shop/d",
    ]);
    expect([...batches].map(names)).toEqual([["shop/b"], ["shop/c"], ["shop/d"]]);
    expect(pending).toEqual([undefined, undefined, undefined, undefined, undefined]);
  });
});

describe("export plan: batch limits", () => {
  const small = (i: number) => projection(`bulk/s${i}`);
  const big = projection("bulk/big", 2_000);
  const unit = size(small(0));
  const cases: {
    name: string;
    projections: ServiceConfigProjection[];
    limits: BatchLimits;
    batches: string[][];
  }[] = [
    {
      name: "at most maxCount projections",
      projections: [0, 1, 2, 3, 4].map(small),
      limits: { maxCount: 2, maxBytes: MAX_BATCH_BYTES },
      batches: [["bulk/s0", "bulk/s1"], ["bulk/s2", "bulk/s3"], ["bulk/s4"]],
    },
    {
      name: "at most maxBytes, counting each projection's overhead",
      projections: [0, 1, 2, 3, 4].map(small),
      limits: { maxCount: 100, maxBytes: 2 * unit },
      batches: [["bulk/s0", "bulk/s1"], ["bulk/s2", "bulk/s3"], ["bulk/s4"]],
    },
    {
      name: "one byte short of two projections: one each",
      projections: [0, 1, 2].map(small),
      limits: { maxCount: 100, maxBytes: 2 * unit - 1 },
      batches: [["bulk/s0"], ["bulk/s1"], ["bulk/s2"]],
    },
    {
      name: "a projection larger than maxBytes goes alone",
      projections: [small(0), big, small(1), small(2)],
      limits: { maxCount: 100, maxBytes: 3 * unit },
      batches: [["bulk/s0"], ["bulk/big"], ["bulk/s1", "bulk/s2"]],
    },
    {
      name: "a projection larger than maxBytes first goes alone too",
      projections: [big, small(0)],
      limits: { maxCount: 100, maxBytes: unit },
      batches: [["bulk/big"], ["bulk/s0"]],
    },
  ];
  for (const { name, projections, limits, batches } of cases) {
    it(name, () => {
      expect(size(big)).toBeGreaterThan(3 * unit);
      expect(batchesOf(projections, new Map(), limits)).toEqual(batches);
    });
  }

  it("by default, the store's limits: MAX_WRITE_BATCH projections and MAX_BATCH_BYTES bytes", () => {
    const many = Array.from({ length: MAX_WRITE_BATCH + 1 }, (_, i) => small(i));
    expect(batchesOf(many).map((batch) => batch.length)).toEqual([MAX_WRITE_BATCH, 1]);
    const huge = projection("bulk/huge", MAX_BATCH_BYTES);
    expect(batchesOf([small(0), huge, small(1)])).toEqual([
      ["bulk/s0"],
      ["bulk/huge"],
      ["bulk/s1"],
    ]);
  });
});

describe("export plan: unexports", () => {
  const view = new Map([
    ["shop/a", 1],
    ["shop/b", 2],
    ["shop/c", 3],
  ]);
  const cases: [string, string[], boolean, { unexport: string[]; held: string[] }][] = [
    ["all still projected", ["shop/a", "shop/b", "shop/c"], false, { unexport: [], held: [] }],
    [
      "some gone: unexported, in the view's order",
      ["shop/b"],
      false,
      { unexport: ["shop/a", "shop/c"], held: [] },
    ],
    [
      "some gone while the source reports problems: held",
      ["shop/b"],
      true,
      { unexport: [], held: ["shop/a", "shop/c"] },
    ],
    [
      "none gone while the source reports problems: nothing held",
      ["shop/a", "shop/b", "shop/c", "shop/d"],
      true,
      { unexport: [], held: [] },
    ],
    [
      "nothing projected: all gone",
      [],
      false,
      { unexport: ["shop/a", "shop/b", "shop/c"], held: [] },
    ],
  ];
  for (const [name, projected, problems, expected] of cases) {
    it(name, () => expect(planUnexports(view, new Set(projected), problems)).toEqual(expected));
  }
});

describe("export plan: versions", () => {
  const v = (nanos: bigint) => formatVersion(nanos);
  const cases: [string, string | undefined, bigint, bigint, bigint][] = [
    ["a new service: the clock", undefined, T0, 0n, T0],
    [
      "the clock ahead of the stored version and the last issued: the clock",
      v(T0 - 5n),
      T0,
      T0 - 1n,
      T0,
    ],
    [
      "the clock behind the stored version (a faster former leader): just above it",
      v(T0 + 60n),
      T0,
      0n,
      T0 + 61n,
    ],
    ["the clock equal to the stored version: just above it", v(T0), T0, 0n, T0 + 1n],
    ["two in one nanosecond: just above the last issued", undefined, T0, T0, T0 + 1n],
    [
      "the clock behind the last issued (stepped back): just above it",
      undefined,
      T0,
      T0 + 9n,
      T0 + 10n,
    ],
    [
      "the stored version above the last issued, both above the clock",
      v(T0 + 20n),
      T0,
      T0 + 9n,
      T0 + 21n,
    ],
    [
      "the last issued above the stored version, both above the clock",
      v(T0 + 5n),
      T0,
      T0 + 9n,
      T0 + 10n,
    ],
    ["an unparsable stored version is ignored", "yesterday", T0, 0n, T0],
    [
      "a stored version at the edge of the window (5 minutes ahead) is built on",
      v(T0 + DEFAULT_MAX_FUTURE_NANOS),
      T0,
      0n,
      T0 + DEFAULT_MAX_FUTURE_NANOS + 1n,
    ],
    [
      "a stored version beyond the window is not one this exporter wrote: ignored",
      v(T0 + DEFAULT_MAX_FUTURE_NANOS + 1n),
      T0,
      0n,
      T0,
    ],
    ["a forged far-future version is ignored", "9999-12-31T23:59:59.999999999Z", T0, 0n, T0],
  ];
  for (const [name, previous, now, lastIssued, expected] of cases) {
    it(name, () => expect(nextVersion(previous, now, lastIssued)).toBe(expected));
  }

  it("strictly increase across services and per service under a frozen clock", () => {
    const stored: Record<string, string | undefined> = {
      "shop/a": undefined,
      "shop/b": v(T0 + 3n),
    };
    let last = 0n;
    const issued: [string, bigint][] = [];
    for (const service of ["shop/a", "shop/b", "shop/a", "shop/b", "shop/a"]) {
      last = nextVersion(stored[service], T0, last);
      stored[service] = v(last);
      issued.push([service, last]);
    }
    expect(issued).toEqual([
      ["shop/a", T0],
      ["shop/b", T0 + 4n],
      ["shop/a", T0 + 5n],
      ["shop/b", T0 + 6n],
      ["shop/a", T0 + 7n],
    ]);
  });
});
