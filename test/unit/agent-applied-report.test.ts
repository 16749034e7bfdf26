/**
 * What the agent reports (`report/applied-report.ts` over
 * `report/refusal-memory.ts`): per followed record the applied winner, the
 * newest refusal newer than it (an untrusted origin's only when there is no
 * other), the local override; the bounds (10000 services, 1024-byte
 * messages, a refused version that does not parse sent empty); and the
 * agent name's default and check (`services/common/agent-id.ts`, `--agent-id`).
 */
import { describe, expect, it } from "vitest";
import { parseAgentFlags } from "../../clients/agent/agent-flags.js";
import {
  buildAppliedReport,
  type ReportedRecord,
  reportKey,
} from "../../clients/agent/report/applied-report.js";
import { createRefusalMemory, type Refusal } from "../../clients/agent/report/refusal-memory.js";
import { checkAgentId, defaultAgentId } from "../../services/common/agent-id.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import type { RouteTable } from "../../services/common/route-merge.js";
import { makeProjection, versionAt } from "../support/projections.js";

const winner = (service: string, n: number, origin = "hub"): [string, ImportCandidate] => [
  service,
  { origin, service, projection: makeProjection(service, { origin, version: versionAt(n) }) },
];
const refusal = (
  n: number | string,
  reason: string,
  origin = "hub",
  service = "shop/a",
): Refusal => ({
  origin,
  service,
  version: typeof n === "number" ? versionAt(n) : n,
  reason,
  message: `refused ${reason}`,
});

/** The report of shop/a with `applied` (a version number or none) after `refusals`. */
function reportOf(
  applied: number | undefined,
  refusals: readonly Refusal[],
): ReportedRecord | undefined {
  const memory = createRefusalMemory();
  for (const r of refusals) memory.note(r);
  const report = buildAppliedReport({
    followed: ["shop/a"],
    imported: new Map(applied === undefined ? [] : [winner("shop/a", applied)]),
    table: undefined,
    refusals: memory,
    ready: true,
    revision: 7n,
  });
  return report.services[0];
}

describe("the agent's report: which refusal", () => {
  it.each([
    { name: "none refused", applied: 2, refusals: [], expected: undefined },
    {
      name: "a newer one refused",
      applied: 2,
      refusals: [refusal(3, "unknown_key")],
      expected: "3 unknown_key hub",
    },
    {
      name: "an older one refused (a rollback)",
      applied: 3,
      refusals: [refusal(2, "rollback")],
      expected: undefined,
    },
    {
      name: "the applied version refused again",
      applied: 3,
      refusals: [refusal(3, "unknown_key")],
      expected: undefined,
    },
    {
      name: "nothing applied: any refusal",
      applied: undefined,
      refusals: [refusal(1, "unsigned")],
      expected: "1 unsigned hub",
    },
    {
      name: "an older refusal of the same origin never replaces a newer one",
      applied: 1,
      refusals: [refusal(4, "bad_signature"), refusal(3, "unknown_key")],
      expected: "4 bad_signature hub",
    },
    {
      name: "the same version refused again replaces the reason",
      applied: 1,
      refusals: [refusal(4, "unknown_key"), refusal(4, "bad_signature")],
      expected: "4 bad_signature hub",
    },
    {
      name: "the newest of several origins",
      applied: 1,
      refusals: [refusal(3, "unknown_key", "east"), refusal(4, "too_large", "west")],
      expected: "4 too_large west",
    },
    {
      name: "an untrusted origin's only when there is no other",
      applied: 1,
      refusals: [refusal(9, "untrusted_origin", "east"), refusal(3, "unknown_key")],
      expected: "3 unknown_key hub",
    },
    {
      name: "a malformed event naming no origin is not reported",
      applied: undefined,
      refusals: [refusal(3, "malformed_event", "")],
      expected: undefined,
    },
    {
      name: "a version that does not parse is sent empty, named in the message",
      applied: undefined,
      refusals: [refusal("yesterday", "invalid_version")],
      expected: ' invalid_version hub version "yesterday": refused invalid_version',
    },
  ])("$name", ({ applied, refusals, expected }) => {
    const entry = reportOf(applied, refusals);
    const r = entry?.rejection;
    const shown =
      r === undefined
        ? undefined
        : `${r.version === "" ? "" : Number(r.version.slice(-4, -1))} ${r.reason} ${r.originCluster}${r.version === "" ? ` ${r.message}` : ""}`;
    expect(shown).toBe(expected);
    expect(entry?.version).toBe(applied === undefined ? "" : versionAt(applied));
  });
});

describe("the agent's report: content and bounds", () => {
  it("names every followed record once, sorted, with the winner, or nothing, and the local override", () => {
    const table: RouteTable = {
      services: [
        {
          service: "shop/b",
          source: "local",
          origin: "west",
          version: "sha256:0123456789abcdef",
          projection: makeProjection("shop/b"),
          resolution: "",
        },
      ],
    };
    const report = buildAppliedReport({
      followed: ["shop/b", "@mesh", "shop/a", "shop/b"],
      imported: new Map([winner("shop/a", 2), winner("shop/b", 1, "east")]),
      table,
      refusals: createRefusalMemory(),
      ready: false,
      revision: 3n,
    });
    expect(report).toEqual({
      ready: false,
      revision: 3n,
      services: [
        { service: "@mesh", originCluster: "", version: "", localOverride: false },
        { service: "shop/a", originCluster: "hub", version: versionAt(2), localOverride: false },
        { service: "shop/b", originCluster: "east", version: versionAt(1), localOverride: true },
      ],
    });
    expect(reportKey(report)).toBe(reportKey({ ...report }));
    expect(reportKey(report)).not.toBe(reportKey({ ...report, ready: true }));
  });

  it("cuts messages to 1024 bytes and names at most 10000 services", () => {
    const memory = createRefusalMemory();
    memory.note({ ...refusal(3, "bad_signature"), message: "ü".repeat(700) });
    const followed = Array.from({ length: 10_005 }, (_, i) => `ns/s${String(i).padStart(5, "0")}`);
    const report = buildAppliedReport({
      followed: [...followed, "shop/a"],
      imported: new Map(),
      table: undefined,
      refusals: memory,
      ready: true,
      revision: 0n,
    });
    expect(report.services).toHaveLength(10_000);
    const small = buildAppliedReport({
      followed: ["shop/a"],
      imported: new Map(),
      table: undefined,
      refusals: memory,
      ready: true,
      revision: 0n,
    });
    expect(small.services[0]?.rejection?.message).toBe("ü".repeat(512));
  });

  it("forgets the refusals of records no longer followed", () => {
    const memory = createRefusalMemory();
    memory.note(refusal(3, "unknown_key"));
    memory.prune(new Set(["shop/b"]));
    expect(memory.newest("shop/a", "")).toBeUndefined();
  });
});

describe("the agent's name", () => {
  it.each([
    { sources: { nodeName: "node-1.example", hostname: "host" }, id: "node-1.example" },
    { sources: { nodeName: "", hostname: "host" }, id: "host" },
    { sources: { nodeName: undefined, hostname: "host" }, id: "host" },
  ])("defaults to $id", ({ sources, id }) => {
    expect(defaultAgentId(sources)).toBe(id);
  });

  it.each([
    ["node-1", true],
    ["Node_1.a-b", true],
    ["a".repeat(253), true],
    ["a".repeat(254), false],
    ["", false],
    ["node 1", false],
    ["node/1", false],
  ] as const)("%s valid: %s", (id, valid) => {
    expect(checkAgentId(id) === undefined).toBe(valid);
  });

  const base = ["--registrar", "http://127.0.0.1:8080", "--cluster", "west", "--deps", "shop/a"];
  it("--agent-id, else NODE_NAME, else the host name; a bad one is a usage error naming its source", () => {
    const parse = (extra: string[], nodeName: string | undefined, hostname = "host-1") => {
      const config = parseAgentFlags([...base, ...extra], { nodeName, hostname });
      return config === "help" ? "help" : config.agentId;
    };
    expect(parse(["--agent-id", "given"], "node")).toBe("given");
    expect(parse([], "node-7")).toBe("node-7");
    expect(parse([], undefined)).toBe("host-1");
    expect(() => parse(["--agent-id", "bad id"], "node")).toThrow(/^--agent-id: agent id "bad id"/);
    expect(() => parse([], undefined, "bad host")).toThrow(/default agent id .*give --agent-id/);
  });
});
