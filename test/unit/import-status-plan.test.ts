/**
 * The import status plan: which services a replica publishes and what each
 * says (served version, agents, rejections bounded, local digest), the
 * writes against what is stored, when the header is due, and which other
 * replicas are stale enough to delete. Table cases over plain inputs.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { RejectedProjectionSchema } from "../../gen/aether/registry/v1/fleet_pb.js";
import {
  batches,
  desiredServiceStatuses,
  encodeStatuses,
  headerDue,
  type ImportRefusal,
  type ImportStatusInputs,
  MAX_REJECTION_MESSAGE_BYTES,
  planStatusWrites,
  replicaHeader,
  type ServedProjection,
  type StatusAgents,
  staleReplicas,
} from "../../services/common/import-status-plan.js";

const NONE = { inSync: 0, behind: 0, rejecting: 0, notReady: 0 };

/** A fake agents view: per service a tally judged against the served version. */
function agents(
  reports: Record<string, { version: string; count: number; rejected?: string }[]>,
): StatusAgents {
  return {
    reportedServices: () => Object.keys(reports),
    serviceAgents(service, served: ServedProjection | undefined) {
      const tally = { ...NONE };
      const rejections = [];
      for (const r of reports[service] ?? []) {
        if (r.rejected !== undefined) {
          tally.rejecting += r.count;
          rejections.push({
            rejection: create(RejectedProjectionSchema, {
              originCluster: "hub",
              version: served?.version ?? "",
              reason: r.rejected,
              message: "no",
            }),
            agents: r.count,
          });
        } else if (r.version === served?.version) tally.inSync += r.count;
        else tally.behind += r.count;
      }
      return { tally, rejections };
    },
  };
}

const refusal = (service: string, origin: string, version = "v1"): ImportRefusal => ({
  service,
  origin,
  version,
  reason: "untrusted_origin",
  message: `${origin} is not trusted`,
});

function inputs(partial: Partial<ImportStatusInputs>): ImportStatusInputs {
  return {
    served: new Map(),
    refusals: [],
    agents: agents({}),
    localDigests: new Map(),
    ...partial,
  };
}

interface Case {
  readonly name: string;
  readonly inputs: ImportStatusInputs;
  /** service → "origin version in/behind/rej importRejections agentRejections digest" */
  readonly want: Record<string, string>;
}

const cases: Case[] = [
  {
    name: "nothing served, reported or configured publishes nothing",
    inputs: inputs({}),
    want: {},
  },
  {
    name: "a served service without agents",
    inputs: inputs({ served: new Map([["shop/web", { origin: "hub", version: "v2" }]]) }),
    want: { "shop/web": "hub v2 0/0/0 [] [] -" },
  },
  {
    name: "agents judged against the served version, one behind, one rejecting",
    inputs: inputs({
      served: new Map([["shop/web", { origin: "hub", version: "v2" }]]),
      agents: agents({
        "shop/web": [
          { version: "v2", count: 3 },
          { version: "v1", count: 1 },
          { version: "v1", count: 2, rejected: "bad_signature" },
        ],
      }),
    }),
    want: { "shop/web": "hub v2 3/1/2 [] [bad_signature*2] -" },
  },
  {
    name: "a service only agents report is published, served nothing",
    inputs: inputs({ agents: agents({ "shop/gone": [{ version: "v1", count: 1 }] }) }),
    want: { "shop/gone": "- - 0/1/0 [] [] -" },
  },
  {
    name: "a refused service is published with its refusals by origin, one per origin",
    inputs: inputs({
      refusals: [
        refusal("shop/web", "west", "v1"),
        refusal("shop/web", "east", "v1"),
        refusal("shop/web", "west", "v3"),
      ],
    }),
    want: { "shop/web": "- - 0/0/0 [east:v1,west:v3] [] -" },
  },
  {
    name: "at most 8 import rejections, the first origins",
    inputs: inputs({
      refusals: Array.from({ length: 10 }, (_, i) => refusal("shop/web", `o${9 - i}`)),
    }),
    want: {
      "shop/web": `- - 0/0/0 [${Array.from({ length: 8 }, (_, i) => `o${i}:v1`).join(",")}] [] -`,
    },
  },
  {
    name: "at most 8 agent rejections",
    inputs: inputs({
      agents: agents({
        "shop/web": Array.from({ length: 10 }, (_, i) => ({
          version: "v1",
          count: 1,
          rejected: `r${i}`,
        })),
      }),
    }),
    want: {
      "shop/web": `- - 0/0/10 [] [${Array.from({ length: 8 }, (_, i) => `r${i}*1`).join(",")}] -`,
    },
  },
  {
    name: "a local digest alone publishes the service, only that one carries it",
    inputs: inputs({
      served: new Map([["shop/web", { origin: "hub", version: "v2" }]]),
      localDigests: new Map([["shop/cart", "ab12"]]),
    }),
    want: { "shop/cart": "- - 0/0/0 [] [] ab12", "shop/web": "hub v2 0/0/0 [] [] -" },
  },
];

describe("desired service statuses", () => {
  it.each(cases)("$name", ({ inputs: given, want }) => {
    const got: Record<string, string> = {};
    for (const [service, s] of desiredServiceStatuses(given)) {
      expect(s.service).toBe(service);
      const a = s.agents ?? NONE;
      got[service] = [
        s.originCluster || "-",
        s.version || "-",
        `${a.inSync}/${a.behind}/${a.rejecting}`,
        `[${s.importRejections.map((r) => `${r.originCluster}:${r.version}`).join(",")}]`,
        `[${s.agentRejections.map((r) => `${r.rejection?.reason}*${r.agents}`).join(",")}]`,
        s.localDigest || "-",
      ].join(" ");
    }
    expect(got).toEqual(want);
  });

  it("cuts a long rejection message to 1024 bytes on a character boundary", () => {
    const long = { ...refusal("shop/web", "west"), message: "é".repeat(1000) };
    const [status] = desiredServiceStatuses(inputs({ refusals: [long] })).values();
    const message = status?.importRejections[0]?.message ?? "";
    expect(new TextEncoder().encode(message).length).toBeLessThanOrEqual(
      MAX_REJECTION_MESSAGE_BYTES,
    );
    expect(message).toBe("é".repeat(512));
  });
});

describe("status writes", () => {
  const bytes = (...b: number[]) => new Uint8Array(b);
  it.each<{
    name: string;
    desired: Record<string, number[]>;
    written: Record<string, number[]>;
    puts: string[];
    deletes: string[];
  }>([
    {
      name: "nothing written: every desired value is put",
      desired: { a: [1], b: [2] },
      written: {},
      puts: ["a", "b"],
      deletes: [],
    },
    {
      name: "unchanged bytes are not rewritten",
      desired: { a: [1], b: [2] },
      written: { a: [1], b: [2] },
      puts: [],
      deletes: [],
    },
    {
      name: "a changed value is put",
      desired: { a: [1], b: [3] },
      written: { a: [1], b: [2] },
      puts: ["b"],
      deletes: [],
    },
    {
      name: "a value no longer desired is deleted",
      desired: { a: [1] },
      written: { a: [1], z: [9] },
      puts: [],
      deletes: ["z"],
    },
  ])("$name", ({ desired, written, puts, deletes }) => {
    const toMap = (o: Record<string, number[]>) =>
      new Map(Object.entries(o).map(([k, v]) => [k, bytes(...v)]));
    const plan = planStatusWrites(toMap(desired), toMap(written));
    expect(plan.puts.map(([service]) => service)).toEqual(puts);
    expect(plan.deletes).toEqual(deletes);
  });

  it("compares encodings: the same desired status encodes to the same bytes", () => {
    const given = inputs({ served: new Map([["shop/web", { origin: "hub", version: "v2" }]]) });
    const first = encodeStatuses(desiredServiceStatuses(given));
    const second = encodeStatuses(desiredServiceStatuses(given));
    expect(planStatusWrites(second, first)).toEqual({ puts: [], deletes: [] });
  });

  it("splits writes into batches", () => {
    expect(batches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
    expect(batches([], 128)).toEqual([]);
  });
});

describe("the header", () => {
  const facts = {
    cluster: "east",
    replica: "r1",
    heartbeatMs: 15_000,
    synced: true,
    revision: 42,
    controlCluster: "",
    localSource: false,
    services: 3,
    agents: { inSync: 2, behind: 1, rejecting: 0, notReady: 1 },
  };
  it("carries what the replica says and when", () => {
    const header = replicaHeader(facts, 1_700_000_000_250);
    expect(header.publishedTime?.seconds).toBe(1_700_000_000n);
    expect(header.publishedTime?.nanos).toBe(250_000_000);
    expect(header.heartbeatInterval?.seconds).toBe(15n);
    expect(header.revision).toBe(42n);
    expect(header.agents?.notReady).toBe(1);
    expect(header.services).toBe(3);
  });
  const last = { header: replicaHeader(facts, 1_000), atMs: 1_000 };
  it.each([
    {
      name: "none written yet",
      last: undefined,
      next: replicaHeader(facts, 2_000),
      now: 2_000,
      due: true,
    },
    {
      name: "unchanged, within the heartbeat",
      last,
      next: replicaHeader(facts, 2_000),
      now: 2_000,
      due: false,
    },
    {
      name: "unchanged, a heartbeat later",
      last,
      next: replicaHeader(facts, 16_000),
      now: 16_000,
      due: true,
    },
    {
      name: "changed revision, within the heartbeat",
      last,
      next: replicaHeader({ ...facts, revision: 43 }, 2_000),
      now: 2_000,
      due: true,
    },
  ])("due: $name", ({ last: previous, next, now, due }) => {
    expect(headerDue(previous, next, now, 15_000)).toBe(due);
  });
});

describe("stale replicas", () => {
  const now = 1_000_000;
  it.each([
    {
      name: "a fresh one is kept",
      r: { replica: "b", publishedMs: now - 10_000, seenAtMs: now },
      stale: [],
    },
    {
      name: "one older than 10 heartbeats is deleted",
      r: { replica: "b", publishedMs: now - 150_001, seenAtMs: now },
      stale: ["b"],
    },
    {
      name: "exactly 10 heartbeats old is kept",
      r: { replica: "b", publishedMs: now - 150_000, seenAtMs: 0 },
      stale: [],
    },
    { name: "the own replica never", r: { replica: "a", publishedMs: 0, seenAtMs: 0 }, stale: [] },
    {
      name: "header-less, seen long ago",
      r: { replica: "c", publishedMs: undefined, seenAtMs: now - 200_000 },
      stale: ["c"],
    },
    {
      name: "header-less, seen just now",
      r: { replica: "c", publishedMs: undefined, seenAtMs: now },
      stale: [],
    },
    {
      name: "its own longer heartbeat keeps it longer",
      r: { replica: "b", publishedMs: now - 200_000, seenAtMs: now, heartbeatMs: 60_000 },
      stale: [],
    },
  ])("$name", ({ r, stale }) => {
    expect(staleReplicas([r], "a", now, 15_000)).toEqual(stale);
  });
});
