/**
 * The registrar as an OS process over a real etcd that serves clients only
 * over TLS and requires client certificates (`--client-cert-auth`): it
 * syncs and serves with the right CA and client certificate, stays not
 * ready (and says why) without the client certificate or with the wrong CA,
 * and authenticates with a user and a password file when etcd's auth is on.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { EtcdHandle } from "../support/etcd.js";
import {
  createTestCa,
  createTestPki,
  etcdctl,
  etcdTlsFlags,
  startTlsEtcd,
  type TestCa,
  type TestPki,
} from "../support/etcd-tls.js";
import { makeProjection } from "../support/projections.js";
import { startRegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const TIMEOUT_MS = 30_000;

let dir: string;
let pki: TestPki;
let otherCa: TestCa;
let etcd: EtcdHandle;
let seedFile: string;
let prefixCounter = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-etcd-tls-"));
  pki = await createTestPki(join(dir, "pki"));
  otherCa = await createTestCa(join(dir, "other"), "other-ca");
  seedFile = join(dir, "seed.json");
  await writeFile(
    seedFile,
    JSON.stringify({
      projections: [toJson(ServiceConfigProjectionSchema, makeProjection("shop/cart"))],
    }),
  );
  etcd = await startTlsEtcd(pki);
}, TIMEOUT_MS);
afterEach(async () => {
  await stopAllRegistrars();
});
afterAll(async () => {
  await etcd?.stop();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

/** A fresh key prefix per test, so tests share one etcd without seeing each other. */
function freshPrefix(): string {
  prefixCounter++;
  return `/aether/t${process.pid}-${prefixCounter}`;
}

function registrarOn(
  endpoint: string,
  extra: readonly string[],
  options: { env?: NodeJS.ProcessEnv; cluster?: string; prefix?: string } = {},
): ReturnType<typeof startRegistrarProcess> {
  return startRegistrarProcess(
    [
      "--cluster",
      options.cluster ?? "hub",
      "--store",
      "etcd",
      "--etcd-endpoints",
      endpoint,
      "--etcd-prefix",
      options.prefix ?? freshPrefix(),
      "--store-timeout",
      "1s",
      ...extra,
    ],
    { timeoutMs: TIMEOUT_MS, ...(options.env === undefined ? {} : { env: options.env }) },
  );
}

async function readyz(url: string): Promise<{ status: number; body: string }> {
  const response = await fetch(`${url}/readyz`);
  return { status: response.status, body: await response.text() };
}

/** Waits until the registrar syncs, then reads its own origin and every origin over HTTP/2. */
async function expectSeededProjection(url: string): Promise<void> {
  await waitFor(async () => (await readyz(url)).status === 200, TIMEOUT_MS, "/readyz 200");
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: url, httpVersion: "2" }),
  );
  // Lists are served from the registrar's cache, which follows the seed's
  // write a moment after /readyz turns ready.
  let own = await client.listConfig({});
  await waitFor(
    async () => {
      own = await client.listConfig({});
      return own.projections.length > 0;
    },
    TIMEOUT_MS,
    "the seeded projection in a listing",
  );
  expect(own.projections.map((p) => [p.service, p.originCluster])).toEqual([["shop/cart", "hub"]]);
  const all = await client.listAllConfig({ view: ConfigView.ALL_ORIGINS });
  expect(all.projections.map((p) => p.service)).toEqual(["shop/cart"]);
}

/** Waits until /readyz reports the store unavailable for a reason matching `reason`, and checks it is 503. */
async function expectStoreUnavailable(url: string, reason: RegExp): Promise<void> {
  let last = { status: 0, body: "" };
  await waitFor(
    async () => {
      last = await readyz(url);
      return last.body.startsWith("store unavailable");
    },
    TIMEOUT_MS,
    "/readyz to report the store unavailable",
  );
  expect(last.status).toBe(503);
  expect(last.body).toMatch(reason);
}

describe("registrar over etcd with TLS and client certificates", () => {
  it("syncs and serves the seeded projection with the CA and a client certificate", async () => {
    const registrar = await registrarOn(etcd.endpoint, [...etcdTlsFlags(pki), "--seed", seedFile]);
    await expectSeededProjection(registrar.url);
  });

  it("verifies etcd against the default roots without --etcd-ca-file", async () => {
    // Where the system trust store includes the test CA (gRPC's roots file
    // unset, so Node's store with NODE_EXTRA_CA_CERTS), the client
    // certificate alone is enough.
    const registrar = await registrarOn(
      etcd.endpoint,
      ["--etcd-cert-file", pki.client.cert, "--etcd-key-file", pki.client.key, "--seed", seedFile],
      { env: { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: undefined, NODE_EXTRA_CA_CERTS: pki.ca.cert } },
    );
    await expectSeededProjection(registrar.url);
  });

  it("is not ready without a client certificate, and /readyz says the store is unavailable", async () => {
    const registrar = await registrarOn(etcd.endpoint, ["--etcd-ca-file", pki.ca.cert]);
    // etcd refuses the handshake (a TLS alert); the exact wording is OpenSSL's.
    await expectStoreUnavailable(registrar.url, /etcd range failed: 14 UNAVAILABLE/);
  });

  it("is not ready when etcd's certificate is not signed by --etcd-ca-file", async () => {
    const registrar = await registrarOn(etcd.endpoint, [
      "--etcd-ca-file",
      otherCa.cert,
      "--etcd-cert-file",
      pki.client.cert,
      "--etcd-key-file",
      pki.client.key,
    ]);
    await expectStoreUnavailable(registrar.url, /UNAVAILABLE.*unable to verify/);
  });

  it("is not ready over plain TLS without the test CA in the trust store", async () => {
    const registrar = await registrarOn(
      etcd.endpoint,
      ["--etcd-cert-file", pki.client.cert, "--etcd-key-file", pki.client.key],
      { env: { GRPC_DEFAULT_SSL_ROOTS_FILE_PATH: undefined, NODE_EXTRA_CA_CERTS: undefined } },
    );
    await expectStoreUnavailable(registrar.url, /UNAVAILABLE.*unable to verify/);
  });

  it("exits 2 naming the flag and the file when a TLS file cannot be read", async () => {
    const missing = join(dir, "missing.crt");
    await expect(registrarOn(etcd.endpoint, ["--etcd-ca-file", missing])).rejects.toThrow(
      `registrar exited with 2 before logging the expected line; stderr: aether-registrar: --etcd-ca-file ${missing}: cannot read it`,
    );
  });
});

describe("registrar over etcd with TLS and user/password authentication", () => {
  let authEtcd: EtcdHandle;
  let passwordFile: string;
  let wrongPasswordFile: string;
  const tls = () => etcdTlsFlags(pki);

  beforeAll(async () => {
    authEtcd = await startTlsEtcd(pki);
    // A user that may read and write under /aether/ only, and root (which
    // etcd requires before auth can be enabled).
    await etcdctl(authEtcd, pki, ["user", "add", "root:root-secret"]);
    await etcdctl(authEtcd, pki, ["role", "add", "aether-registrar"]);
    await etcdctl(authEtcd, pki, [
      "role",
      "grant-permission",
      "aether-registrar",
      "--prefix=true",
      "readwrite",
      "/aether/",
    ]);
    await etcdctl(authEtcd, pki, ["user", "add", "aether:s3cret pass"]);
    await etcdctl(authEtcd, pki, ["user", "grant-role", "aether", "aether-registrar"]);
    await etcdctl(authEtcd, pki, ["auth", "enable"]);
    passwordFile = join(dir, "etcd-password");
    await writeFile(passwordFile, "s3cret pass\n");
    wrongPasswordFile = join(dir, "wrong-password");
    await writeFile(wrongPasswordFile, "not it\n");
  }, TIMEOUT_MS);
  afterAll(async () => {
    await authEtcd?.stop();
  });

  it("authenticates with --etcd-username and --etcd-password-file and serves", async () => {
    const registrar = await registrarOn(authEtcd.endpoint, [
      ...tls(),
      "--etcd-username",
      "aether",
      "--etcd-password-file",
      passwordFile,
      "--seed",
      seedFile,
    ]);
    await expectSeededProjection(registrar.url);
    // The seed really is in etcd, under the prefix the user may write.
    const keys = await etcdctl(
      authEtcd,
      pki,
      ["get", "--prefix", "--keys-only", "/aether/"],
      "root:root-secret",
    );
    expect(keys).toContain("/clusters/hub/");
  });

  it("is not ready with a wrong password, and /readyz says authentication failed", async () => {
    const registrar = await registrarOn(authEtcd.endpoint, [
      ...tls(),
      "--etcd-username",
      "aether",
      "--etcd-password-file",
      wrongPasswordFile,
    ]);
    await expectStoreUnavailable(registrar.url, /authentication failed/);
  });

  it("campaigns, exports and resigns (leases) as a user limited to /aether/", async () => {
    const prefix = freshPrefix();
    const registrar = await registrarOn(
      authEtcd.endpoint,
      [
        ...tls(),
        "--etcd-username",
        "aether",
        "--etcd-password-file",
        passwordFile,
        "--control-cluster",
        "hub",
        "--export-source",
        "dir:examples/mesh",
        "--election-ttl",
        "2s",
      ],
      { prefix },
    );
    await registrar.waitForLog((l) => l.msg === "elected export leader", TIMEOUT_MS);
    const client = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: registrar.url, httpVersion: "2" }),
    );
    await waitFor(
      async () => (await client.listConfig({})).projections.length > 0,
      TIMEOUT_MS,
      "exported projections",
    );
    expect(await registrar.stop()).toBe(0);
    expect(registrar.logs.some((l) => l.msg === "resigned export leadership")).toBe(true);
  });

  it("signs in again after an etcd restart (which forgets every token) and follows new writes", async () => {
    const prefix = freshPrefix();
    const auth = ["--etcd-username", "aether", "--etcd-password-file", passwordFile];
    const spoke = await registrarOn(authEtcd.endpoint, [...tls(), ...auth], {
      cluster: "east",
      prefix,
    });
    await waitFor(async () => (await readyz(spoke.url)).status === 200, TIMEOUT_MS, "ready");
    await authEtcd.restart();
    await spoke.waitForLog(
      (l) => l.msg === "store lost; watch streams keep the last synced view until it is back",
    );
    await waitFor(async () => (await readyz(spoke.url)).status === 200, TIMEOUT_MS, "ready again");
    await registrarOn(authEtcd.endpoint, [...tls(), ...auth, "--seed", seedFile], { prefix });
    const client = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: spoke.url, httpVersion: "2" }),
    );
    await waitFor(
      async () => (await client.listConfig({ originCluster: "hub" })).projections.length === 1,
      TIMEOUT_MS,
      "the spoke to see the hub's projection",
    );
    const hub = await client.listConfig({ originCluster: "hub" });
    expect(hub.projections.map((p) => p.service)).toEqual(["shop/cart"]);
  });

  it("is not ready without credentials once auth is enabled, and /readyz names the permission error", async () => {
    // The client certificate's CN (aether-registrar) is taken as the etcd user, which does not exist.
    const registrar = await registrarOn(authEtcd.endpoint, tls());
    let last = { status: 0, body: "" };
    await waitFor(
      async () => {
        last = await readyz(registrar.url);
        return last.body.startsWith("store permission denied");
      },
      TIMEOUT_MS,
      "/readyz to name the permission error",
    );
    expect(last.status).toBe(503);
    expect(last.body).toMatch(
      /^store permission denied: etcd user aether-registrar may not read \/aether\/t/,
    );
  });
});
