/**
 * Per-origin etcd roles on a real etcd 3.4 with TLS, client-certificate
 * authentication and auth enabled: `aetherctl etcd-rbac --apply` creates the
 * roles and users (before auth is on, then again as root once it is, which
 * changes nothing), and with only those users, each signed in by the CN of
 * its client certificate (etcd's `--client-cert-auth`: no password, no
 * token): east may write its own subtree and not the hub's, a hub and a
 * spoke registrar and an agent work end to end, and a registrar whose role
 * lacks write on its own subtree is not ready and its /readyz names the
 * permission error.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { Etcd3, EtcdPermissionDeniedError } from "etcd3";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { Health, HealthCheckResponse_ServingStatus } from "../../gen/grpc/health/v1/health_pb.js";
import {
  type ConfigStore,
  StorePermissionError,
} from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { startAgentProcess, stopAllAgents } from "../support/agent-process.js";
import type { EtcdHandle } from "../support/etcd.js";
import {
  createTestPki,
  etcdctl,
  etcdTlsFlags,
  issueTestCert,
  startTlsEtcd,
  type TestCert,
  type TestPki,
} from "../support/etcd-tls.js";
import { startRegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const TIMEOUT_MS = 30_000;
const PREFIX = "/aether/v1";
const ROOT = "root:root-secret";

let dir: string;
let pki: TestPki;
let etcd: EtcdHandle;
let rootPasswordFile: string;
const certs: Record<string, TestCert> = {};
const clients: Etcd3[] = [];
const stores: ConfigStore[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-etcd-rbac-"));
  pki = await createTestPki(join(dir, "pki"));
  for (const cluster of ["hub", "east", "west"]) {
    certs[cluster] = await issueTestCert(pki.ca, join(dir, "pki"), cluster, `aether-${cluster}`);
  }
  etcd = await startTlsEtcd(pki);
  rootPasswordFile = join(dir, "root-password");
  await writeFile(rootPasswordFile, "root-secret\n");
  const applied = await aetherctlApply([
    "--cluster",
    "hub",
    "--cluster",
    "east",
    "--cluster",
    "west",
  ]);
  expect(applied.code, applied.stderr).toBe(0);
  expect(applied.stdout).toContain("user aether-east: created without a password\n");
  // west's role misses write on its own subtree.
  await etcdctl(etcd, pki, [
    "role",
    "revoke-permission",
    "aether-west",
    "--prefix=true",
    `${PREFIX}/clusters/west/`,
  ]);
  await etcdctl(etcd, pki, ["user", "add", ROOT]);
  await etcdctl(etcd, pki, ["auth", "enable"]);
}, TIMEOUT_MS);
afterEach(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
});
afterAll(async () => {
  for (const client of clients) client.close();
  await Promise.all(stores.map((store) => store.close()));
  await etcd?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** Runs `aetherctl etcd-rbac --apply` against the test etcd over TLS, with `extra` flags. */
function aetherctlApply(extra: readonly string[], cert: TestCert = pki.client) {
  return runAetherctlInProcess([
    "etcd-rbac",
    "--prefix",
    PREFIX,
    "--apply",
    "--etcd-endpoints",
    etcd.endpoint,
    ...etcdTlsFlags(pki, cert),
    ...extra,
  ]);
}

/** The TLS flags of a registrar of `cluster`: its client certificate, CN aether-<cluster>. */
function tlsAs(cluster: string): string[] {
  return etcdTlsFlags(pki, certs[cluster] as TestCert);
}

/** An etcd store of `cluster`, signed in by its certificate's CN. */
function storeAs(cluster: string): ConfigStore {
  const cert = certs[cluster] as TestCert;
  const store = createEtcdStore({
    origin: cluster,
    endpoints: [etcd.endpoint],
    prefix: PREFIX,
    security: {
      credentials: {
        rootCertificate: readFileSync(pki.ca.cert),
        certChain: readFileSync(cert.cert),
        privateKey: readFileSync(cert.key),
      },
    },
  });
  stores.push(store);
  return store;
}

/** A raw etcd client signed in as `cluster`'s user by its certificate's CN. */
function clientAs(cluster: string): Etcd3 {
  const cert = certs[cluster] as TestCert;
  const client = new Etcd3({
    hosts: etcd.endpoint,
    credentials: {
      rootCertificate: readFileSync(pki.ca.cert),
      certChain: readFileSync(cert.cert),
      privateKey: readFileSync(cert.key),
    },
  });
  clients.push(client);
  return client;
}

/** A registrar of `cluster` signed in by its certificate's CN, trusting `controlCluster`. */
function registrar(cluster: string, extra: readonly string[], controlCluster = "hub") {
  return startRegistrarProcess(
    [
      "--cluster",
      cluster,
      "--control-cluster",
      controlCluster,
      "--store",
      "etcd",
      "--etcd-endpoints",
      etcd.endpoint,
      "--etcd-prefix",
      PREFIX,
      "--store-timeout",
      "1s",
      ...tlsAs(cluster),
      ...extra,
    ],
    { timeoutMs: TIMEOUT_MS },
  );
}

async function readyz(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: await response.text() };
}

describe("per-origin etcd roles with auth on", () => {
  it("refuses --apply by a registrar's user once auth is on, in one line naming etcd's error (exit 1)", async () => {
    const refused = await aetherctlApply(["--cluster", "east"], certs.east as TestCert);
    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toMatch(/^aetherctl: etcd-rbac --apply failed: .*permission denied\n$/);
  });

  it("gives each role exactly read on the prefix and readwrite on its own subtree; a second --apply as root changes nothing", async () => {
    const again = await aetherctlApply([
      "--cluster",
      "east",
      "--etcd-username",
      "root",
      "--etcd-password-file",
      rootPasswordFile,
    ]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).not.toContain("revoked");
    const role = await etcdctl(etcd, pki, ["role", "get", "aether-east"], ROOT);
    expect(role).toBe(
      [
        "Role aether-east",
        "KV Read:",
        `\t[${PREFIX}/, /aether/v10) (prefix ${PREFIX}/)`,
        `\t[${PREFIX}/clusters/east/, ${PREFIX}/clusters/east0) (prefix ${PREFIX}/clusters/east/)`,
        "KV Write:",
        `\t[${PREFIX}/clusters/east/, ${PREFIX}/clusters/east0) (prefix ${PREFIX}/clusters/east/)`,
        "",
      ].join("\n"),
    );
  });

  it("east's user cannot put or delete under the hub's subtree (permission denied) and can under its own", async () => {
    const east = clientAs("east");
    const hubKey = `${PREFIX}/clusters/hub/config/c2hvcC94`;
    const ownKey = `${PREFIX}/clusters/east/config/c2hvcC94`;
    await expect(east.put(hubKey).value("forged")).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await expect(east.delete().key(hubKey)).rejects.toBeInstanceOf(EtcdPermissionDeniedError);
    await expect(east.delete().prefix(`${PREFIX}/clusters/hub/`)).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    // Nor anywhere else outside its subtree: the old election name, another prefix.
    await expect(east.put(`${PREFIX}/election/east/export/1`).value("x")).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await expect(east.put("/elsewhere").value("x")).rejects.toBeInstanceOf(
      EtcdPermissionDeniedError,
    );
    await east.put(ownKey).value("own");
    expect(await east.get(ownKey).string()).toBe("own");
    await east.delete().key(ownKey);
    expect(await east.get(ownKey).string()).toBeNull();
    // It reads every origin.
    await east.getAll().prefix(`${PREFIX}/clusters/`).keys();
  });

  it("the store's access check passes for east, names what west's role lacks, and never writes", async () => {
    const ownKey = `${PREFIX}/clusters/east/config/c2hvcC95`;
    await clientAs("east").put(ownKey).value("kept");
    const revision = Number((await clientAs("east").get(ownKey).exec()).header.revision);
    const eastStore = storeAs("east");
    await eastStore.checkAccess?.({ write: true });
    const westStore = storeAs("west");
    await westStore.checkAccess?.({ write: false });
    const denied = westStore.checkAccess?.({ write: true });
    await expect(denied).rejects.toBeInstanceOf(StorePermissionError);
    await expect(denied).rejects.toThrow(
      `permission denied: etcd user aether-west may not write ${PREFIX}/clusters/west/`,
    );
    const after = await clientAs("east").get(ownKey).exec();
    expect(after.kvs.map((kv) => kv.value.toString())).toEqual(["kept"]);
    expect(Number(after.header.revision)).toBe(revision);
    await clientAs("east").delete().key(ownKey);
  });

  it("a hub exporting, a spoke and an agent work end to end with only those users", async () => {
    const hub = await registrar("hub", [
      "--export-source",
      "dir:examples/mesh",
      "--election-ttl",
      "2s",
    ]);
    await hub.waitForLog((l) => l.msg === "elected export leader", TIMEOUT_MS);
    const east = await registrar("east", []);
    const agent = await startAgentProcess([
      "--registrar",
      east.url,
      "--cluster",
      "east",
      "--control-cluster",
      "hub",
      "--deps",
      "shop/checkout",
    ]);
    await waitFor(
      async () =>
        (await agent.routes()).some((e) => e.service === "shop/checkout" && e.origin === "hub"),
      TIMEOUT_MS,
      "the hub's shop/checkout in east's agent",
    );
    for (const r of [hub, east]) expect(await readyz(r.url)).toMatchObject({ status: 200 });
    // The election key lies in the hub's own subtree.
    const keys = await etcdctl(etcd, pki, ["get", "--prefix", "--keys-only", `${PREFIX}/`], ROOT);
    expect(keys).toMatch(new RegExp(`^${PREFIX}/clusters/hub/election/export/[0-9a-f]+$`, "m"));
    // Besides the hub's subtree, only east's published import status (its own subtree).
    const lines = keys.split("\n").filter((k) => k !== "");
    const eastStatus = `${PREFIX}/clusters/east/status/`;
    expect(
      lines.filter((k) => !k.startsWith(`${PREFIX}/clusters/hub/`) && !k.startsWith(eastStatus)),
    ).toEqual([]);
    expect(lines.some((k) => k.startsWith(eastStatus))).toBe(true);
    expect(hub.logs.some((l) => l.msg === "store access denied")).toBe(false);
    expect(await hub.stop()).toBe(0);
    expect(hub.logs.some((l) => l.msg === "resigned export leadership")).toBe(true);
  });

  it("a registrar whose role lacks write on its own subtree is not ready, and /readyz names the permission error", async () => {
    const west = await registrar("west", ["--export-source", "dir:examples/mesh"], "west");
    let last = { status: 0, body: "" };
    await waitFor(
      async () => {
        last = await readyz(west.url);
        return last.body.includes("permission denied");
      },
      20_000,
      "/readyz to name the permission error",
    );
    expect(last.status).toBe(503);
    expect(last.body).toContain(
      `store permission denied: etcd user aether-west may not write ${PREFIX}/clusters/west/`,
    );
    expect(last.body).toContain("aetherctl etcd-rbac");
    // The gRPC health service agrees with /readyz (load balancers and gRPC probes ask it).
    const health = createClient(
      Health,
      createConnectTransport({ baseUrl: west.url, httpVersion: "1.1" }),
    );
    expect((await health.check({ service: "" })).status).toBe(
      HealthCheckResponse_ServingStatus.NOT_SERVING,
    );
  });
});
