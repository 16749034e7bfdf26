/**
 * The mesh record end to end over a real etcd, with real registrar
 * processes: a hub (`--control-cluster hub`, signing with a key the test
 * made) exports a manifest directory holding a MeshConfig named `default`;
 * its mesh record `@mesh` is written under `clusters/hub/config/` like a
 * service's projection, signed, and a spoke registrar (`--control-cluster
 * hub --origin-keys --require-signatures`) lists it in its EFFECTIVE view.
 * Re-writing the file with identical content writes nothing (the version
 * stays); an edit bumps the version once; deleting the MeshConfig deletes
 * the key, and the spoke stops serving it.
 */
import { generateKeyPairSync } from "node:crypto";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { splitStoredValue } from "../../services/common/projection-signature.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { keyIdOf } from "../../services/signing/key-algorithm.js";
import { startSpokeRegistrar } from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  type ChangeRecorder,
  recordChanges,
  startExportRegistrar,
} from "../support/export-store.js";
import { EXPORT_FIXTURES } from "../support/memory-source.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("mesh");
const TIMEOUT_MS = 20_000;
const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const KEY_ID = keyIdOf(publicKey);

/** A MeshConfig named default with `timeout` as its request timeout. */
const meshConfig = (timeout: string) => `apiVersion: mesh.aether.dev/v1alpha1
kind: MeshConfig
metadata:
  name: default
spec:
  requestTimeout: ${timeout}
  retryBudget: { percent: 20, minRetryConcurrency: 3 }
`;

let dir: string;
let prefix: string;
let hub: RegistrarProcess;
let spoke: RegistrarProcess;
let recorder: ChangeRecorder;
const meshFile = () => join(dir, "routes", "mesh-config.yaml");
const meshKey = () => projectionKey(prefix, "hub", "@mesh");

/** The spoke's EFFECTIVE listing of `@mesh`. */
async function effectiveMesh(): Promise<ServiceConfigProjection[]> {
  const transport = createConnectTransport({ baseUrl: spoke.url, httpVersion: "1.1" });
  const listed = await createClient(ConfigService, transport).listAllConfig({
    view: ConfigView.EFFECTIVE,
    services: ["@mesh"],
  });
  return listed.projections;
}

/** The hub's reconciles so far (logged at debug level). */
const reconciles = () => hub.logs.filter((l) => l.msg === "export reconciled").length;

/** Writes the mesh file and resolves once the hub reconciled after it. */
async function writeMesh(text: string): Promise<void> {
  const before = reconciles();
  await writeFile(meshFile(), text);
  await waitFor(() => reconciles() > before, TIMEOUT_MS, "a reconcile after the write");
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-mesh-"));
  prefix = shared.freshPrefix();
  await cp(EXPORT_FIXTURES, join(dir, "routes"), { recursive: true });
  await writeFile(meshFile(), meshConfig("15s"));
  const keyFile = join(dir, "hub-key.pem");
  const originKeys = join(dir, "origin-keys.json");
  await writeFile(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }).toString());
  const publicPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  await writeFile(originKeys, JSON.stringify({ origins: { hub: [publicPem] } }));
  hub = await startExportRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    dir: join(dir, "routes"),
    extra: ["--control-cluster", "hub", "--signing-key-file", keyFile, "--log-level", "debug"],
  });
  spoke = await startSpokeRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    extra: ["--control-cluster", "hub", "--origin-keys", originKeys, "--require-signatures"],
  });
  recorder = await recordChanges(shared.raw, `${prefix}/clusters/`);
}, 60_000);

afterAll(async () => {
  await recorder?.cancel();
  await stopAllRegistrars();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("the mesh record over a real etcd", () => {
  it("is exported signed under the hub's origin and served by the spoke's EFFECTIVE view", async () => {
    await waitFor(
      async () => (await effectiveMesh()).length === 1,
      TIMEOUT_MS,
      "@mesh at the spoke",
    );
    const stored = (await shared.raw.get(meshKey()).buffer()) as Buffer;
    expect(splitStoredValue(stored).signature?.keyId).toBe(KEY_ID);
    const [served] = await effectiveMesh();
    expect(served?.originCluster).toBe("hub");
    expect(served?.signature?.keyId).toBe(KEY_ID);
    expect(served?.routes).toEqual([]);
    expect(served?.meshConfig?.requestTimeout?.seconds).toBe(15n);
    expect(served?.meshConfig?.retryBudget).toMatchObject({ percent: 20, minRetryConcurrency: 3 });
  });

  it("an identical rewrite writes nothing; an edit bumps the version once", async () => {
    await waitFor(
      async () => (await effectiveMesh()).length === 1,
      TIMEOUT_MS,
      "@mesh at the spoke",
    );
    const first = (await effectiveMesh())[0]?.version;
    const puts = () => recorder.changes.filter((c) => c.key === meshKey()).length;
    const before = puts();
    // The same object, keys in another order: the source's snapshot changes, the content not.
    await writeMesh(
      "kind: MeshConfig\napiVersion: mesh.aether.dev/v1alpha1\nmetadata: { name: default }\nspec:\n  retryBudget: { minRetryConcurrency: 3, percent: 20 }\n  requestTimeout: 15s\n",
    );
    expect(puts()).toBe(before);
    expect((await effectiveMesh())[0]?.version).toBe(first);

    await writeMesh(meshConfig("20s"));
    await waitFor(
      async () => (await effectiveMesh())[0]?.meshConfig?.requestTimeout?.seconds === 20n,
      TIMEOUT_MS,
      "the edited @mesh at the spoke",
    );
    const [edited] = await effectiveMesh();
    expect(edited?.version).not.toBe(first);
    expect(edited?.signature?.keyId).toBe(KEY_ID);
    expect(puts()).toBe(before + 1);
  });

  it("deleting the MeshConfig deletes the key; the spoke stops serving @mesh", async () => {
    await rm(meshFile());
    await waitFor(
      async () => (await shared.raw.get(meshKey()).buffer()) === null,
      TIMEOUT_MS,
      "the @mesh key deleted",
    );
    await waitFor(async () => (await effectiveMesh()).length === 0, TIMEOUT_MS, "@mesh gone");
    expect(recorder.changes.filter((c) => c.key === meshKey()).at(-1)?.type).toBe("delete");
    expect(await shared.raw.get(projectionKey(prefix, "hub", "shop/checkout")).buffer()).not.toBe(
      null,
    );
  });
});
