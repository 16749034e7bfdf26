/**
 * The export leader election and write fencing against a real etcd: one
 * leader among candidates, hand-over on resign, fenced writes refused once
 * the leader's key is gone, and a term that ends by itself when etcd stops
 * answering for longer than the lease TTL; the election lives under the
 * origin's own subtree, and a candidate does not lead while a candidate of an
 * older release holds a key under the old election name (a rolling upgrade).
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  createEtcdLeaderElection,
  exportElectionName,
  legacyExportElectionName,
} from "../../services/registrar/export/etcd-leader-election.js";
import type {
  LeaderElection,
  LeaderTerm,
} from "../../services/registrar/export/leader-election.js";
import { type ConfigStore, FencedWriteError } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { type CapturedLogger, captureLogger } from "../support/capture-logger.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { makeProjection } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("e");
const elections: LeaderElection[] = [];
const stores: ConfigStore[] = [];

afterEach(async () => {
  await shared.etcd.resume();
  await Promise.all(elections.splice(0).map((e) => e.stop()));
  await Promise.all(stores.splice(0).map((s) => s.close()));
});

function election(
  prefix: string,
  identity: string,
  ttlMs = 2_000,
  logger?: CapturedLogger["logger"],
): LeaderElection {
  const created = createEtcdLeaderElection({
    ...(logger === undefined ? {} : { logger }),
    endpoints: [shared.etcd.endpoint],
    name: exportElectionName(prefix, "hub"),
    deferTo: [legacyExportElectionName(prefix, "hub")],
    ttlMs,
    identity,
    requestTimeoutMs: 500,
  });
  elections.push(created);
  return created;
}

function store(prefix: string): ConfigStore {
  const created = createEtcdStore({
    origin: "hub",
    endpoints: [shared.etcd.endpoint],
    prefix,
    requestTimeoutMs: 500,
  });
  stores.push(created);
  return created;
}

describe("etcd export leader election", () => {
  it("elects exactly one of three candidates, and hands over at once when the leader resigns", async () => {
    const prefix = shared.freshPrefix();
    const candidates = ["a", "b", "c"].map((id) => election(prefix, id));
    for (const c of candidates) c.start();
    await waitFor(() => candidates.some((c) => c.term !== undefined), 5_000, "a leader");
    // Give the others every chance to (wrongly) think they lead too.
    await waitFor(
      async () =>
        (await shared.raw.getAll().prefix(`${prefix}/clusters/hub/election/`).keys()).length === 3,
    );
    expect(candidates.filter((c) => c.term !== undefined)).toHaveLength(1);
    const leader = candidates.find((c) => c.term !== undefined) as LeaderElection;
    const leaderKey = leader.term?.fence?.key as string;
    expect(leaderKey.startsWith(`${prefix}/clusters/hub/election/export/`)).toBe(true);
    expect(await shared.raw.get(leaderKey).string()).toMatch(/^[abc]$/);

    const started = Date.now();
    await leader.stop();
    await waitFor(() => candidates.some((c) => c !== leader && c.term !== undefined), 2_000);
    expect(Date.now() - started).toBeLessThan(1_000); // a resign, not a lease expiry
    expect(candidates.filter((c) => c.term !== undefined)).toHaveLength(1);
    expect(await shared.raw.get(leaderKey).string()).toBeNull();
  });

  it("fences writes: they land while the term holds, and are refused (writing nothing) once the key is gone; the term ends and a new one begins", async () => {
    const prefix = shared.freshPrefix();
    const e = election(prefix, "a");
    const s = store(prefix);
    const terms: (LeaderTerm | undefined)[] = [];
    e.onChange((term) => terms.push(term));
    e.start();
    await waitFor(() => e.term !== undefined, 5_000);
    const term = e.term as LeaderTerm;
    const fence = term.fence;
    expect(fence).toBeDefined();
    await s.put(makeProjection("shop/a"), { fence });
    expect(await s.delete("shop/a", { fence })).toBeGreaterThan(0);
    await s.put(makeProjection("shop/a"), { fence });

    // The lease is gone behind the leader's back (as after a long freeze).
    await shared.raw.delete().key(fence?.key as string);
    const revision = await s.revision();
    await expect(s.put(makeProjection("shop/b"), { fence })).rejects.toBeInstanceOf(
      FencedWriteError,
    );
    await expect(s.delete("shop/a", { fence })).rejects.toBeInstanceOf(FencedWriteError);
    expect(await s.revision()).toBe(revision);
    expect((await s.list()).entries.map((x) => x.service)).toEqual(["shop/a"]);

    e.relinquish(term, "fenced");
    expect(e.term).toBeUndefined(); // at once, not after the next tick
    expect(term.signal.aborted).toBe(true);
    await waitFor(() => e.term !== undefined, 5_000, "a new term");
    const next = e.term as LeaderTerm;
    expect(next.id).toBe(term.id + 1);
    expect(next.fence?.key).not.toBe(fence?.key);
    await s.put(makeProjection("shop/b"), { fence: next.fence });
    await waitFor(() => terms.length >= 3);
    expect(terms.map((t) => t?.id)).toEqual([term.id, undefined, next.id]);
  });

  it("ends the term by itself when etcd stops answering for the lease TTL, and leads again once etcd is back", async () => {
    const prefix = shared.freshPrefix();
    const e = election(prefix, "a", 2_000);
    e.start();
    await waitFor(() => e.term !== undefined, 5_000);
    const term = e.term as LeaderTerm;
    await shared.etcd.pause();
    const frozenAt = Date.now();
    await waitFor(() => term.signal.aborted, 5_000, "the term to end");
    const heldFor = Date.now() - frozenAt;
    expect(e.term).toBeUndefined();
    expect(heldFor).toBeLessThanOrEqual(2_000 + 300); // the TTL, plus timer delay on a busy machine
    await shared.etcd.resume();
    await waitFor(() => e.term !== undefined, 10_000, "leadership again");
    expect(e.term?.id).toBe(term.id + 1);
  });

  it("a candidate takes over as soon as the leader's lease ends, and the old leader notices", async () => {
    const prefix = shared.freshPrefix();
    const a = election(prefix, "a", 2_000);
    a.start();
    await waitFor(() => a.term !== undefined, 5_000);
    const b = election(prefix, "b", 2_000);
    b.start();
    await waitFor(
      async () =>
        (await shared.raw.getAll().prefix(`${prefix}/clusters/hub/election/`).keys()).length === 2,
    );
    expect(b.term).toBeUndefined();
    // The leader's lease ends without a resign from it (as when etcd expires it).
    const leaderKey = a.term?.fence?.key ?? "";
    const leaseId = BigInt(`0x${leaderKey.slice(leaderKey.lastIndexOf("/") + 1)}`).toString();
    await shared.raw.leaseClient.leaseRevoke({ ID: leaseId });
    await waitFor(() => b.term !== undefined, 3_000, "b to lead");
    await waitFor(() => a.term === undefined, 3_000, "a to notice it lost the lease");
  });

  it("does not lead while an older release's candidate holds a key under the old election name, and leads once it is gone", async () => {
    const prefix = shared.freshPrefix();
    // An old-release leader: a key on a lease under <prefix>/election/hub/export/.
    const oldLease = shared.raw.lease(10, { autoKeepAlive: false });
    const oldKey = `${legacyExportElectionName(prefix, "hub")}/${BigInt(await oldLease.grant()).toString(16)}`;
    await oldLease.put(oldKey).value("old-release");
    const captured = captureLogger();
    const e = election(prefix, "new", 2_000, captured.logger);
    e.start();
    await waitFor(
      () => captured.lines.some((l) => String(l.msg).startsWith("waiting for an older release")),
      5_000,
      "the new candidate to wait for the old one",
    );
    expect(
      (await shared.raw.getAll().prefix(`${prefix}/clusters/hub/election/`).keys()).length,
    ).toBe(1);
    expect(e.term).toBeUndefined();
    const started = Date.now();
    await oldLease.revoke();
    await waitFor(() => e.term !== undefined, 3_000, "the new candidate to lead");
    expect(Date.now() - started).toBeLessThan(2_000); // on the delete, not a timeout
  });

  it("a leader steps aside when an older release's candidate starts campaigning under the old name mid-term, and leads again once it is gone", async () => {
    const prefix = shared.freshPrefix();
    const e = election(prefix, "new");
    e.start();
    await waitFor(() => e.term !== undefined, 5_000, "the new candidate to lead");
    const term = e.term as LeaderTerm;
    // An old-release replica restarts mid-upgrade: it campaigns under the old name.
    const oldLease = shared.raw.lease(10, { autoKeepAlive: false });
    const oldKey = `${legacyExportElectionName(prefix, "hub")}/${BigInt(await oldLease.grant()).toString(16)}`;
    const appearedAt = Date.now();
    await oldLease.put(oldKey).value("old-release");
    await waitFor(() => term.signal.aborted, 3_000, "the term to end");
    expect(Date.now() - appearedAt).toBeLessThan(1_000); // on the watch, not a lease expiry
    expect(e.term).toBeUndefined();
    await oldLease.revoke();
    await waitFor(() => e.term !== undefined, 5_000, "leadership again");
    expect(e.term?.id).toBe(term.id + 1);
  });
});
