/**
 * The status encoder with a memory: over seeded random sequences of inputs
 * (served versions moving, agents' tallies and rejections changing, import
 * refusals and local digests coming and going) it returns exactly the
 * bytes a fresh `encodeStatuses(desiredServiceStatuses(...))` returns for
 * the same services, and reuses the previous array only for a service
 * whose status is unchanged.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { RejectedProjectionSchema } from "../../gen/aether/registry/v1/fleet_pb.js";
import { createStatusEncoder } from "../../services/common/import-status-memo.js";
import {
  desiredServiceStatuses,
  encodeStatuses,
  type ImportRefusal,
  type ImportStatusInputs,
  type StatusAgents,
} from "../../services/common/import-status-plan.js";
import { mulberry32 } from "../../services/common/mulberry32.js";

type Tally = { inSync: number; behind: number; rejecting: number; notReady: number };
type AgentView = ReturnType<StatusAgents["serviceAgents"]>;

/** Agents as a plain table of what `serviceAgents` answers, by service. */
function agentsOf(table: ReadonlyMap<string, AgentView>): StatusAgents {
  return {
    reportedServices: () => table.keys(),
    serviceAgents: (service) =>
      table.get(service) ?? {
        tally: { inSync: 0, behind: 0, rejecting: 0, notReady: 0 },
        rejections: [],
      },
  };
}

const SERVICES = Array.from({ length: 12 }, (_, i) => `ns/svc-${i}`);

/** One random step's inputs, built from the previous ones (never modified in place). */
function step(next: () => number, before: ImportStatusInputs, table: Map<string, AgentView>) {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T;
  const served = new Map(before.served);
  let refusals = [...before.refusals];
  const localDigests = new Map(before.localDigests);
  const agents = new Map(table);
  for (let edits = 1 + Math.floor(next() * 3); edits > 0; edits--) {
    const service = pick(SERVICES);
    switch (
      pick(["serve", "unserve", "tally", "agentReject", "noAgents", "refuse", "unrefuse", "digest"])
    ) {
      case "serve":
        served.set(service, {
          origin: pick(["hub", "west"]),
          version: `v${Math.floor(next() * 4)}`,
        });
        break;
      case "unserve":
        served.delete(service);
        break;
      case "tally": {
        const tally: Tally = {
          inSync: pick([0, 1, 2]),
          behind: pick([0, 1]),
          rejecting: 0,
          notReady: 0,
        };
        agents.set(service, { tally, rejections: agents.get(service)?.rejections ?? [] });
        break;
      }
      case "agentReject": {
        const rejection = create(RejectedProjectionSchema, {
          originCluster: "hub",
          version: `v${Math.floor(next() * 4)}`,
          reason: pick(["invalid_value", "bad_signature"]),
          message: pick(["no", "not at all"]),
        });
        const tally = { inSync: 0, behind: 0, rejecting: 1, notReady: 0 };
        agents.set(service, { tally, rejections: [{ rejection, agents: pick([1, 2]) }] });
        break;
      }
      case "noAgents":
        agents.delete(service);
        break;
      case "refuse": {
        const refusal: ImportRefusal = {
          service,
          origin: pick(["west", "east"]),
          version: `v${Math.floor(next() * 4)}`,
          reason: "untrusted_origin",
          message: pick(["untrusted", "not trusted here"]),
        };
        refusals = [...refusals.filter((r) => r.service !== service), refusal];
        break;
      }
      case "unrefuse":
        refusals = refusals.filter((r) => r.service !== service);
        break;
      default:
        if (next() < 0.5) localDigests.delete(service);
        else localDigests.set(service, pick(["ab12", "cd34"]));
    }
  }
  return { inputs: { served, refusals, agents: agentsOf(agents), localDigests }, table: agents };
}

describe("status encoder with a memory", () => {
  it("returns a fresh encoding's bytes after every random step, reusing only unchanged services", () => {
    let reused = 0;
    let reencoded = 0;
    for (let seed = 1; seed <= 20; seed++) {
      const next = mulberry32(seed);
      const encoder = createStatusEncoder();
      let table = new Map<string, AgentView>();
      let inputs: ImportStatusInputs = {
        served: new Map(),
        refusals: [],
        agents: agentsOf(table),
        localDigests: new Map(),
      };
      let previous = new Map<string, Uint8Array>();
      for (let i = 0; i < 60; i++) {
        ({ inputs, table } = step(next, inputs, table));
        const got = encoder.encode(inputs);
        const want = encodeStatuses(desiredServiceStatuses(inputs));
        expect(new Set(got.keys())).toEqual(new Set(want.keys()));
        for (const [service, bytes] of want) {
          const value = got.get(service) as Uint8Array;
          expect(Buffer.from(value).equals(Buffer.from(bytes)), `${seed}/${i} ${service}`).toBe(
            true,
          );
          const old = previous.get(service);
          if (old === value) reused++;
          else if (old !== undefined) {
            // A new array only when the bytes differ: an unchanged status is never re-encoded.
            expect(Buffer.from(old).equals(Buffer.from(value)), `${seed}/${i} ${service}`).toBe(
              false,
            );
            reencoded++;
          }
        }
        expect(encoder.size).toBe(want.size);
        previous = new Map(got); // the encoder changes its map in place
      }
    }
    // Both paths were taken many times.
    expect(reused).toBeGreaterThan(1_000);
    expect(reencoded).toBeGreaterThan(100);
  });

  it("re-encodes a service whose agent tally alone changed, and forgets a service no longer desired", () => {
    const encoder = createStatusEncoder();
    const served = new Map([["shop/web", { origin: "hub", version: "v1" }]]);
    const agents = (inSync: number) =>
      agentsOf(
        new Map([
          ["shop/web", { tally: { inSync, behind: 0, rejecting: 0, notReady: 0 }, rejections: [] }],
        ]),
      );
    const base = { served, refusals: [], localDigests: new Map<string, string>() };
    const first = encoder.encode({ ...base, agents: agents(1) }).get("shop/web");
    const same = encoder.encode({ ...base, agents: agents(1) }).get("shop/web");
    const moved = encoder.encode({ ...base, agents: agents(2) }).get("shop/web");
    expect(same).toBe(first);
    expect(moved).not.toBe(first);
    expect(encoder.encode({ ...base, served: new Map(), agents: agentsOf(new Map()) }).size).toBe(
      0,
    );
    expect(encoder.size).toBe(0);
  });
});
