/**
 * The agent's imported state and its guard against silent loss, driven by
 * hand with a fake clock: applied deletes are reported and logged, a
 * rollback is refused (a `rollback` rejection, never a loss, also after a
 * delete and from a cached initial state); a complete state that lacks most of the held projections keeps
 * them, held, until the registrar has them again, deletes them explicitly,
 * or still lacks them when the hold has run out (a keep-alive says so).
 */
import { describe, expect, it } from "vitest";
import type { ReceivedChange } from "../../clients/agent/follower/candidate-set.js";
import {
  createImportedState,
  type FollowerState,
  type FollowerUpdate,
} from "../../clients/agent/follower/imported-state.js";
import type { LossReport } from "../../clients/agent/follower/loss-report.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import { captureLogger } from "../support/capture-logger.js";
import { makeProjection, versionAt } from "../support/projections.js";

const put = (origin: string, service: string, n = 1): ReceivedChange => ({
  kind: "put",
  origin,
  service,
  projection: makeProjection(service, { origin, version: versionAt(n) }),
});
const del = (origin: string, service: string): ReceivedChange => ({
  kind: "delete",
  origin,
  service,
  projection: undefined,
});
/** The accepted candidate of a put (as a restored cache holds it). */
const candidateOf = (change: ReceivedChange): ImportCandidate => ({
  origin: change.origin,
  service: change.service,
  projection: change.projection as ImportCandidate["projection"],
});
const SERVICES = ["shop/a", "shop/b", "shop/c", "shop/d"];

/** An imported state of SERVICES with a hold of one minute, its clock, and what it reported. */
function stateWith(services = SERVICES, initial?: FollowerState) {
  let clock = 1_000_000;
  const captured = captureLogger();
  const updates: FollowerUpdate[] = [];
  const losses: LossReport[] = [];
  const rejections: string[] = [];
  const imported = createImportedState({
    policy: createImportPolicy(),
    services,
    initial,
    onRejection: (r) => rejections.push(`${r.origin}/${r.service}@${r.version}:${r.reason}`),
    logger: captured.logger,
    guard: { threshold: { fraction: 0.5, minCount: 3 }, holdMs: 60_000 },
    now: () => clock,
    onUpdate: (u) => updates.push(u),
    onLoss: (l) => losses.push(l),
  });
  const held = () =>
    [...(imported.state?.candidates.values() ?? [])]
      .map((c) => `${c.origin}/${c.service}@${c.projection.version === versionAt(1) ? 1 : "n"}`)
      .sort();
  return {
    imported,
    updates,
    losses,
    rejections,
    captured,
    held,
    tick: (ms: number) => {
      clock += ms;
    },
  };
}

const everything = SERVICES.map((s) => put("hub", s));

describe("imported state: applied deletes, refused rollbacks", () => {
  it("reports and logs a streamed delete; a rollback is refused by stream and by snapshot, and the newer one stays", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, [...everything, put("east", "shop/a", 3)]);
    expect(t.losses).toEqual([]); // the first state takes nothing away
    t.imported.change(6n, del("hub", "shop/d"));
    t.imported.change(7n, put("east", "shop/a", 2)); // 3 -> 2: refused
    t.imported.synced(false, 9n, [
      put("hub", "shop/a"),
      put("hub", "shop/b"),
      put("east", "shop/a", 2),
    ]);
    expect(
      t.losses.map((l) => ({
        via: l.via,
        deleted: l.deleted.map((c) => `${c.origin}/${c.service}`),
        held: l.newlyHeld.length,
      })),
    ).toEqual([
      { via: "change", deleted: ["hub/shop/d"], held: 0 },
      { via: "synced", deleted: ["hub/shop/c"], held: 0 }, // 1 of 3 of hub
    ]);
    expect(t.captured.withMessage("applied deletes of imported projections")).toHaveLength(2);
    expect(t.rejections).toEqual([`east/shop/a@${versionAt(2)}:rollback`]); // reported once
    expect(t.imported.state?.candidates.get("east\u0000shop/a")?.projection.version).toBe(
      versionAt(3),
    );
    expect(t.imported.state?.marks).toContainEqual({
      origin: "east",
      service: "shop/a",
      version: versionAt(3),
    });
  });

  it("the mark survives a delete: the old value after it is refused, a newer one is taken", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, [put("hub", "shop/a", 3)]);
    t.imported.change(6n, del("hub", "shop/a"));
    t.imported.change(7n, put("hub", "shop/a", 2));
    expect(t.imported.state?.candidates.size).toBe(0);
    expect(t.rejections).toEqual([`hub/shop/a@${versionAt(2)}:rollback`]);
    expect(t.imported.state?.marks).toEqual([
      { origin: "hub", service: "shop/a", version: versionAt(3) },
    ]);
    t.imported.change(8n, put("hub", "shop/a", 4));
    expect(t.imported.state?.candidates.get("hub\u0000shop/a")?.projection.version).toBe(
      versionAt(4),
    );
  });

  it("an initial state's marks and candidates are marks (a restarted agent): older values are refused", () => {
    const t = stateWith(SERVICES, {
      services: SERVICES,
      revision: 4n,
      candidates: new Map([["hub\u0000shop/a", candidateOf(put("hub", "shop/a", 3))]]),
      marks: [{ origin: "east", service: "shop/b", version: versionAt(5) }], // deleted before
    });
    t.imported.synced(false, 5n, [put("hub", "shop/a", 1), put("east", "shop/b", 4)]);
    expect(t.rejections).toEqual([
      `hub/shop/a@${versionAt(1)}:rollback`,
      `east/shop/b@${versionAt(4)}:rollback`,
    ]);
    expect([...(t.imported.state?.candidates.keys() ?? [])]).toEqual(["hub\u0000shop/a"]);
  });

  it("marks are per origin: another origin's older version is taken (it only loses the service)", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, [put("hub", "shop/a", 3), put("east", "shop/a", 1)]);
    expect(t.rejections).toEqual([]);
    expect(t.imported.state?.candidates.size).toBe(2);
  });
});

describe("imported state: a mass disappearance is held", () => {
  it("keeps what a fresh snapshot lacks, says so, and releases each one the registrar has again", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, everything);
    t.imported.synced(false, 9n, [put("hub", "shop/a")]); // three of four gone at once
    expect(t.held()).toEqual(["hub/shop/a@1", "hub/shop/b@1", "hub/shop/c@1", "hub/shop/d@1"]);
    expect([...t.imported.held.keys()]).toHaveLength(3);
    expect(t.imported.state?.revision).toBe(9n);
    expect(t.losses.at(-1)).toMatchObject({ via: "synced", deleted: [] });
    expect(t.losses.at(-1)?.newlyHeld).toHaveLength(3);
    expect(
      t.captured.lines.filter((l) => String(l.msg).startsWith("holding imported projections")),
    ).toHaveLength(1);
    // A streamed upsert of a held one: back, no longer held.
    t.imported.change(10n, put("hub", "shop/b", 2));
    expect(t.imported.held.size).toBe(2);
    expect(t.losses.at(-1)?.back.map((c) => c.service)).toEqual(["shop/b"]);
    // A poll that has another one again: back; the last is still held.
    t.imported.listed(11n, [put("hub", "shop/a"), put("hub", "shop/b", 2), put("hub", "shop/c")]);
    expect([...t.imported.held.values()].map((h) => h.candidate.service)).toEqual(["shop/d"]);
    expect(t.held()).toEqual(["hub/shop/a@1", "hub/shop/b@n", "hub/shop/c@1", "hub/shop/d@1"]);
  });

  it("a streamed DELETE of a held projection is the registrar's word: applied", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, everything);
    t.imported.synced(false, 9n, []);
    expect(t.imported.held.size).toBe(4);
    expect(t.imported.held.get(`hub\u0000shop/a`)?.reason).toMatch(/\(none left\)$/);
    t.imported.change(10n, del("hub", "shop/a"));
    expect(t.imported.held.size).toBe(3);
    expect(t.losses.at(-1)?.deleted.map((c) => c.service)).toEqual(["shop/a"]);
    expect(t.held()).toEqual(["hub/shop/b@1", "hub/shop/c@1", "hub/shop/d@1"]);
  });

  it("drops held projections the registrar still lacks once the hold ran out: on a keep-alive, not before", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, everything);
    t.imported.synced(false, 9n, [put("hub", "shop/a")]);
    t.tick(59_999);
    t.imported.advance(12n);
    expect(t.imported.held.size).toBe(3); // not yet
    t.tick(1);
    const updates = t.updates.length;
    t.imported.advance(13n);
    expect(t.imported.held.size).toBe(0);
    expect(t.updates).toHaveLength(updates + 1);
    expect(t.updates.at(-1)).toMatchObject({ via: "expiry" });
    expect(t.imported.state?.revision).toBe(13n);
    expect(t.held()).toEqual(["hub/shop/a@1"]);
    expect(t.losses.at(-1)?.expired).toHaveLength(3);
    expect(
      t.losses
        .at(-1)
        ?.deleted.map((c) => c.service)
        .sort(),
    ).toEqual(["shop/b", "shop/c", "shop/d"]);
    expect(
      t.captured.withMessage(
        "hold ran out and the registrar still lacks them: dropping held projections",
      ),
    ).toHaveLength(1);
  });

  it("a keep-alive at a revision already applied confirms the state too", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, everything);
    t.imported.synced(false, 9n, [put("hub", "shop/a")]);
    t.imported.confirmed();
    expect(t.imported.held.size).toBe(3);
    t.tick(60_000);
    t.imported.confirmed();
    expect(t.imported.held.size).toBe(0);
    expect(t.imported.state?.revision).toBe(9n);
    expect(t.held()).toEqual(["hub/shop/a@1"]);
  });

  it("a later complete state after the hold ran out drops them too; one before it keeps them", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, everything);
    t.imported.listed(9n, [put("hub", "shop/a")]);
    t.tick(30_000);
    t.imported.listed(10n, [put("hub", "shop/a")]);
    expect(t.imported.held.size).toBe(3);
    t.tick(30_000);
    t.imported.listed(11n, [put("hub", "shop/a")]);
    expect(t.imported.held.size).toBe(0);
    expect(t.held()).toEqual(["hub/shop/a@1"]);
  });

  it("a dependency set change is not a disappearance", () => {
    const t = stateWith();
    t.imported.synced(false, 5n, everything);
    t.imported.setServices(["shop/a"]);
    t.imported.synced(false, 9n, [put("hub", "shop/a")]);
    expect(t.imported.held.size).toBe(0);
    expect(t.losses).toEqual([]);
    expect(t.held()).toEqual(["hub/shop/a@1"]);
  });
});
