/**
 * Self-healing export over a real etcd: another writer (a raw etcd client)
 * forges a value under the hub's own key, deletes one, and puts a key of a
 * service the hub does not export. The hub registrar process puts each
 * right within a term, counts it in /metrics (and never its own writes),
 * and a spoke registrar ends up serving the hub's real content.
 */
import { toBinary } from "@bufbuild/protobuf";
import { afterEach, describe, expect, it } from "vitest";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionContent } from "../../services/common/projection-content.js";
import { formatVersion, parseVersion } from "../../services/common/projection-version.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { effectiveProjection, startClusterRegistrar } from "../support/e2e-cluster.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  expectedBytes,
  readRawProjections,
  scrapeMetric,
  setCanaryWeights,
  startExportRegistrar,
  storedCanaryWeights,
  versionsOf,
} from "../support/export-store.js";
import { copyExportFixtures, type FixtureDir } from "../support/memory-source.js";
import { makeProjection } from "../support/projections.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("heal");
const dirs: FixtureDir[] = [];

afterEach(async () => {
  await stopAllRegistrars();
  await Promise.all(dirs.splice(0).map((d) => d.remove()));
});

const SERVICES = ["payments/ledger", "shop/checkout", "web/frontend"];
const REPAIRED = "repaired own keys another writer had changed";
const FOREIGN = "another writer changed an own key";

/** Whether the hub's key of `service` holds the projector's bytes (at whatever version it holds). */
async function holdsRealContent(prefix: string, dir: string, service: string): Promise<boolean> {
  const stored = await readRawProjections(shared.raw, prefix, "hub");
  const expected = await expectedBytes(dir, "hub", versionsOf(stored));
  const bytes = stored.get(service)?.bytes;
  return bytes !== undefined && Buffer.from(bytes).equals(expected.get(service) as Uint8Array);
}

/** Writes `projection` under the hub's key of its service with a raw etcd client. */
async function forge(prefix: string, projection: ServiceConfigProjection): Promise<void> {
  const value = toBinary(ServiceConfigProjectionSchema, { ...projection, originCluster: "hub" });
  await shared.raw.put(projectionKey(prefix, "hub", projection.service)).value(Buffer.from(value));
}

describe("self-healing export over a real etcd", () => {
  it("repairs a forged value, a deleted key and a stray key under its origin, counts each, and the spoke serves the hub's real content", async () => {
    const prefix = shared.freshPrefix();
    const fixtures = await copyExportFixtures();
    dirs.push(fixtures);
    const dir = fixtures.path;
    const [hub, spoke] = await Promise.all([
      startExportRegistrar({
        endpoint: shared.etcd.endpoint,
        prefix,
        dir,
        extra: ["--control-cluster", "hub", "--log-level", "debug"],
      }),
      startClusterRegistrar({
        endpoint: shared.etcd.endpoint,
        prefix,
        cluster: "spoke",
        controlCluster: "hub",
      }),
    ]);
    await waitFor(
      async () => (await readRawProjections(shared.raw, prefix, "hub")).size === SERVICES.length,
      10_000,
      "the hub's exports",
    );
    const repairs = (kind: string) =>
      scrapeMetric(hub.url, `aether_config_export_repairs_total{kind="${kind}"}`);
    await waitFor(async () => (await repairs("put")) === 0, 5_000, "the repairs metric");
    expect(await repairs("delete")).toBe(0);
    expect(await repairs("foreign_put")).toBe(0);

    // Its own edits are no repairs.
    await setCanaryWeights(dir, 80, 20);
    await waitFor(
      async () => (await storedCanaryWeights(shared.raw, prefix)) === "80,20",
      10_000,
      "the edit to be exported",
    );

    // A forged shop/checkout: other routes, a version two seconds ahead of the hub's.
    const real = (await readRawProjections(shared.raw, prefix, "hub")).get("shop/checkout");
    const forgedVersion = formatVersion(
      (parseVersion(real?.projection.version as string) as bigint) + 2_000_000_000n,
    );
    await forge(
      prefix,
      makeProjection("shop/checkout", { backend: "rogue/sink", version: forgedVersion }),
    );
    await waitFor(() => holdsRealContent(prefix, dir, "shop/checkout"), 10_000, "the repair");
    const repaired = (await readRawProjections(shared.raw, prefix, "hub")).get("shop/checkout");
    expect(parseVersion(repaired?.projection.version as string)).toBeGreaterThan(
      parseVersion(forgedVersion) as bigint,
    );
    await waitFor(async () => (await repairs("put")) === 1, 5_000, "the put repair counted");

    // The spoke ends up with the hub's real content, at the repair's version.
    await waitFor(
      async () =>
        (await effectiveProjection(spoke.url, "shop/checkout"))?.version ===
        repaired?.projection.version,
      10_000,
      "the spoke to serve the repaired projection",
    );
    const served = (await effectiveProjection(
      spoke.url,
      "shop/checkout",
    )) as ServiceConfigProjection;
    expect(projectionContent(served)).toEqual(
      projectionContent(repaired?.projection as ServiceConfigProjection),
    );

    // A deleted key of an exported service is put back.
    await shared.raw.delete().key(projectionKey(prefix, "hub", "web/frontend"));
    await waitFor(() => holdsRealContent(prefix, dir, "web/frontend"), 10_000, "the re-put");
    await waitFor(async () => (await repairs("delete")) === 1, 5_000, "the delete repair counted");

    // A key of a service the hub does not export is deleted.
    await forge(prefix, makeProjection("rogue/extra"));
    await waitFor(
      async () => !(await readRawProjections(shared.raw, prefix, "hub")).has("rogue/extra"),
      10_000,
      "the stray key to be deleted",
    );
    await waitFor(async () => (await repairs("foreign_put")) === 1, 5_000, "the stray counted");

    expect([...(await readRawProjections(shared.raw, prefix, "hub")).keys()].sort()).toEqual(
      SERVICES,
    );
    expect(await repairs("put")).toBe(1);
    expect(hub.logs.filter((l) => l.msg === REPAIRED)).toHaveLength(3);
    // One foreign change seen per raw write; none of the hub's own writes.
    expect(hub.logs.filter((l) => l.msg === FOREIGN).map((l) => l.service)).toEqual([
      "shop/checkout",
      "web/frontend",
      "rogue/extra",
    ]);
    await waitFor(
      async () => (await effectiveProjection(spoke.url, "rogue/extra")) === undefined,
      10_000,
      "the spoke to drop the stray key",
    );
  });
});
