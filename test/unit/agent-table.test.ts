/**
 * The registrar's table of reporting agents (`fleet/agent-table.ts`), with a
 * fake clock: the check of a report (each refused field named), the accept
 * rules (incarnation, sequence, content), the bound on agents, expiry after
 * three intervals, and the judgement against the served version, per service
 * and in total, with the rejection kinds.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ReportAppliedConfigRequestSchema } from "../../gen/aether/registry/v1/fleet_pb.js";
import {
  type AgentTable,
  createAgentTable,
  judgeService,
} from "../../services/registrar/fleet/agent-table.js";
import { versionAt } from "../support/projections.js";

type RequestInit = MessageInitShape<typeof ReportAppliedConfigRequestSchema>;
type ServiceInit = NonNullable<RequestInit["services"]>[number];

const v1 = versionAt(1);
const v2 = versionAt(2);
const v3 = versionAt(3);

const request = (init: Partial<RequestInit> = {}) =>
  create(ReportAppliedConfigRequestSchema, {
    agentId: "node-1",
    incarnation: "i1",
    sequence: 1n,
    ready: true,
    services: [{ service: "shop/a", originCluster: "hub", version: v1 }],
    ...init,
  } as RequestInit);

function table(options: { maxAgents?: number } = {}): {
  table: AgentTable;
  clock: { now: number };
  changes: { n: number };
} {
  const clock = { now: 1_000 };
  const changes = { n: 0 };
  const created = createAgentTable({ now: () => clock.now, intervalMs: 1_000, ...options });
  created.onChange(() => changes.n++);
  return { table: created, clock, changes };
}

describe("agent table: the check of a report", () => {
  const refused = (services: ServiceInit[]) => ({ services });
  it.each([
    { name: "an agent_id with a space", init: { agentId: "node 1" }, field: "agent_id:" },
    { name: "an empty agent_id", init: { agentId: "" }, field: "agent_id:" },
    { name: "a 254-character agent_id", init: { agentId: "a".repeat(254) }, field: "agent_id:" },
    { name: "no incarnation", init: { incarnation: "" }, field: "incarnation:" },
    {
      name: "a bad service name",
      init: refused([{ service: "Shop/A" }]),
      field: "services[0].service:",
    },
    {
      name: "a duplicate",
      init: refused([{ service: "shop/a" }, { service: "shop/a" }]),
      field: "services[1].service:",
    },
    {
      name: "a version that does not parse",
      init: refused([{ service: "shop/a", originCluster: "hub", version: "yesterday" }]),
      field: "services[0].version:",
    },
    {
      name: "a version without an origin",
      init: refused([{ service: "shop/a", version: v1 }]),
      field: "services[0].origin_cluster:",
    },
    {
      name: "a rejection version that does not parse",
      init: refused([
        { service: "@mesh", rejection: { originCluster: "hub", version: "x", reason: "rollback" } },
      ]),
      field: "services[0].rejection.version:",
    },
    {
      name: "a rejection without a reason",
      init: refused([{ service: "shop/a", rejection: { originCluster: "hub", version: v1 } }]),
      field: "services[0].rejection.reason:",
    },
    {
      name: "10001 services",
      init: refused(Array.from({ length: 10_001 }, (_, i) => ({ service: `ns/s${i}` }))),
      field: "services: 10001 entries",
    },
  ])("refuses $name, naming the field", ({ init, field }) => {
    const { table: t, changes } = table();
    const outcome = t.report("", request(init as Partial<RequestInit>));
    expect(outcome.result).toBe("invalid");
    expect(outcome.problem?.startsWith(field)).toBe(true);
    expect(t.size).toBe(0);
    expect(changes.n).toBe(0);
  });

  it("takes the mesh record, an empty version and a long message cut to 1024 bytes", () => {
    const { table: t } = table();
    const message = "é".repeat(600);
    const outcome = t.report(
      "",
      request({
        services: [
          { service: "@mesh" },
          {
            service: "shop/a",
            originCluster: "hub",
            version: v1,
            rejection: { originCluster: "hub", version: v2, reason: "unknown_key", message },
          },
        ],
      }),
    );
    expect(outcome.result).toBe("accepted");
    const [kind] = t.serviceAgents("shop/a", { origin: "hub", version: v2 }).rejections;
    expect(Buffer.byteLength(kind?.rejection.message ?? "")).toBe(1024);
    expect(kind?.rejection.message).toBe("é".repeat(512));
  });
});

describe("agent table: accept rules", () => {
  it.each([
    {
      name: "a higher sequence with new content is accepted",
      second: {
        sequence: 2n,
        services: [{ service: "shop/a", originCluster: "hub", version: v2 }],
      },
      result: "accepted",
      version: v2,
      changes: 2,
    },
    {
      name: "a higher sequence with the same content is unchanged",
      second: { sequence: 2n },
      result: "unchanged",
      version: v1,
      changes: 1,
    },
    {
      name: "the same sequence is stale",
      second: {
        sequence: 1n,
        services: [{ service: "shop/a", originCluster: "hub", version: v2 }],
      },
      result: "stale_sequence",
      version: v1,
      changes: 1,
    },
    {
      name: "a lower sequence is stale",
      second: { sequence: 0n, ready: false },
      result: "stale_sequence",
      version: v1,
      changes: 1,
    },
    {
      name: "another incarnation replaces the record whatever its sequence",
      second: {
        incarnation: "i2",
        sequence: 0n,
        services: [{ service: "shop/a", originCluster: "hub", version: v2 }],
      },
      result: "accepted",
      version: v2,
      changes: 2,
    },
  ])("$name", ({ second, result, version, changes: expected }) => {
    const { table: t, changes } = table();
    expect(t.report("", request()).result).toBe("accepted");
    expect(t.report("", request(second as Partial<RequestInit>)).result).toBe(result);
    expect(t.size).toBe(1);
    expect(t.serviceAgents("shop/a", { origin: "hub", version }).tally.inSync).toBe(1);
    expect(changes.n).toBe(expected);
  });

  it("keys agents by the caller's identity and agent_id", () => {
    const { table: t } = table();
    t.report("spiffe://east.mesh/agent", request());
    t.report("spiffe://west.mesh/agent", request());
    t.report("spiffe://west.mesh/agent", request({ agentId: "node-2" }));
    // The same key, a stale sequence: not a fourth agent.
    expect(t.report("spiffe://west.mesh/agent", request()).result).toBe("stale_sequence");
    expect(t.size).toBe(3);
  });

  it("tracks at most maxAgents, making room by expiry first", () => {
    const { table: t, clock } = table({ maxAgents: 2 });
    t.report("", request({ agentId: "a" }));
    t.report("", request({ agentId: "b" }));
    const outcome = t.report("", request({ agentId: "c" }));
    expect(outcome.result).toBe("over_limit");
    expect(outcome.problem).toContain("maximum of 2");
    // A known agent still reports.
    expect(t.report("", request({ agentId: "a", sequence: 2n })).result).toBe("unchanged");
    clock.now += 2_500;
    t.report("", request({ agentId: "a", sequence: 3n }));
    clock.now += 600;
    // b was last heard 3.1 s ago: forgotten to make room.
    expect(t.report("", request({ agentId: "c" })).result).toBe("accepted");
    expect(t.size).toBe(2);
  });

  it("forgets an agent not heard from for three intervals, and tells its listeners", () => {
    const { table: t, clock, changes } = table();
    t.report("", request({ agentId: "a" }));
    clock.now += 1_500;
    t.report("", request({ agentId: "b" }));
    expect(t.expire(clock.now + 1_499)).toBe(0);
    expect(t.expire(clock.now + 1_500)).toBe(1);
    expect(t.size).toBe(1);
    expect(changes.n).toBe(3);
    expect([...t.reportedServices()]).toEqual(["shop/a"]);
    expect(t.expire(clock.now + 3_000)).toBe(1);
    expect([...t.reportedServices()]).toEqual([]);
  });

  it("a stale report does not keep an agent alive", () => {
    const { table: t, clock } = table();
    t.report("", request({ sequence: 5n }));
    clock.now += 2_000;
    t.report("", request({ sequence: 4n }));
    expect(t.expire(clock.now + 1_000)).toBe(1);
  });

  it("an unsubscribed listener is not called; a throwing one does not stop the others", () => {
    const errors: unknown[] = [];
    const t = createAgentTable({
      now: () => 0,
      intervalMs: 1_000,
      onListenerError: (e) => errors.push(e),
    });
    let calls = 0;
    const off = t.onChange(() => calls++);
    t.onChange(() => {
      throw new Error("boom");
    });
    let after = 0;
    t.onChange(() => after++);
    t.report("", request());
    off();
    t.report("", request({ sequence: 2n, ready: false }));
    expect([calls, after, errors.length]).toEqual([1, 2, 2]);
  });
});

describe("agent table: judgement", () => {
  const hub = (version: string) => ({ origin: "hub", version });
  it.each([
    {
      name: "applied the served version",
      entry: { origin: "hub", version: v2 },
      served: hub(v2),
      state: "inSync",
    },
    {
      name: "applied an older one",
      entry: { origin: "hub", version: v1 },
      served: hub(v2),
      state: "behind",
    },
    {
      name: "applied another origin's",
      entry: { origin: "east", version: v2 },
      served: hub(v2),
      state: "behind",
    },
    { name: "applied none", entry: { origin: "", version: "" }, served: hub(v2), state: "behind" },
    {
      name: "refused the served version",
      entry: {
        origin: "hub",
        version: v1,
        rejection: { origin: "hub", version: v2, reason: "bad_signature", message: "" },
      },
      served: hub(v2),
      state: "rejecting",
    },
    {
      name: "refused an older version than the served one",
      entry: {
        origin: "hub",
        version: v1,
        rejection: { origin: "hub", version: v2, reason: "unknown_key", message: "" },
      },
      served: hub(v3),
      state: "behind",
    },
    {
      name: "refused another origin's projection at the served version",
      entry: {
        origin: "hub",
        version: v1,
        rejection: { origin: "east", version: v2, reason: "untrusted_origin", message: "" },
      },
      served: hub(v2),
      state: "behind",
    },
    {
      name: "nothing served, nothing applied",
      entry: { origin: "", version: "" },
      served: undefined,
      state: "inSync",
    },
    {
      name: "nothing served, something applied",
      entry: { origin: "hub", version: v1 },
      served: undefined,
      state: "behind",
    },
  ])("$name: $state", ({ entry, served, state }) => {
    expect(judgeService({ rejection: undefined, localOverride: false, ...entry }, served)).toBe(
      state,
    );
  });

  it("counts each agent once by its worst service, or as not ready", () => {
    const { table: t } = table();
    const svc = (service: string, version: string, refused?: string): ServiceInit => ({
      service,
      originCluster: "hub",
      version,
      ...(refused === undefined
        ? {}
        : { rejection: { originCluster: "hub", version: refused, reason: "unknown_key" } }),
    });
    t.report("", request({ agentId: "sync", services: [svc("shop/a", v2), svc("shop/b", v2)] }));
    t.report("", request({ agentId: "behind", services: [svc("shop/a", v2), svc("shop/b", v1)] }));
    t.report(
      "",
      request({ agentId: "rejects", services: [svc("shop/a", v1, v2), svc("shop/b", v1)] }),
    );
    t.report("", request({ agentId: "starting", ready: false, services: [svc("shop/a", v1, v2)] }));
    t.report("", request({ agentId: "none", services: [] }));
    let asked = 0;
    const totals = t.totals(() => {
      asked++;
      return hub(v2);
    });
    expect(totals).toEqual({ inSync: 2, behind: 1, rejecting: 1, notReady: 1 });
    expect(asked).toBe(2);
    expect(t.serviceAgents("shop/a", hub(v2)).tally).toEqual({
      inSync: 2,
      behind: 0,
      rejecting: 2,
      notReady: 0,
    });
    expect(t.serviceAgents("shop/b", hub(v2)).tally).toEqual({
      inSync: 1,
      behind: 2,
      rejecting: 0,
      notReady: 0,
    });
    // A new served version re-judges without a new report.
    expect(t.serviceAgents("shop/b", hub(v1)).tally).toEqual({
      inSync: 2,
      behind: 1,
      rejecting: 0,
      notReady: 0,
    });
    expect(t.serviceAgents("shop/none", hub(v1)).tally).toEqual({
      inSync: 0,
      behind: 0,
      rejecting: 0,
      notReady: 0,
    });
  });

  it("lists one rejection kind per origin, version and reason, at most 8, newest version first", () => {
    const { table: t } = table();
    const refusal = (agentId: string, version: string, reason: string, message = reason) =>
      t.report(
        "",
        request({
          agentId,
          services: [
            { service: "shop/a", rejection: { originCluster: "hub", version, reason, message } },
          ],
        }),
      );
    refusal("a", v1, "unknown_key", "first message");
    refusal("b", v1, "unknown_key", "second message");
    refusal("c", v1, "bad_signature");
    refusal("d", v2, "unknown_key");
    for (let n = 3; n < 10; n++) refusal(`e${n}`, versionAt(n), "rollback");
    const kinds = t.serviceAgents("shop/a", hub(v2)).rejections;
    expect(kinds).toHaveLength(8);
    expect(kinds.map((k) => k.rejection.version)).toEqual([9, 8, 7, 6, 5, 4, 3, 2].map(versionAt));
    const all = createAgentTable({ now: () => 0, intervalMs: 1_000 });
    for (const [agentId, message] of [
      ["a", "first message"],
      ["b", "second message"],
    ] as const) {
      all.report(
        "",
        request({
          agentId,
          services: [
            {
              service: "shop/a",
              rejection: { originCluster: "hub", version: v1, reason: "unknown_key", message },
            },
          ],
        }),
      );
    }
    all.report(
      "",
      request({
        agentId: "c",
        services: [
          {
            service: "shop/a",
            rejection: { originCluster: "hub", version: v1, reason: "bad_signature" },
          },
        ],
      }),
    );
    expect(
      all
        .serviceAgents("shop/a", undefined)
        .rejections.map((k) => [k.rejection.reason, k.agents, k.rejection.message]),
    ).toEqual([
      ["bad_signature", 1, ""],
      ["unknown_key", 2, "first message"],
    ]);
  });
});
