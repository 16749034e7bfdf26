/**
 * Signed projections with real processes over a real etcd: a hub registrar
 * exporting a directory of manifests signs every projection with a key the
 * test made; a spoke registrar with `--control-cluster hub --origin-keys
 * --require-signatures` verifies them.
 *
 * - Rotation: the new public key added to the `--origin-keys` file of the
 *   spoke and of an agent following it (with `--require-signatures` too),
 *   the hub's key file rewritten (every projection re-signed, same
 *   versions), the old public key removed: neither the spoke nor the agent
 *   ever rejects or stops serving the service, the agent's route table
 *   never holds it unsigned, and it ends up signed by the new key there;
 *   the agent restarted restores it from its cache, signed by the new key.
 * - Forgery, the hub stopped (so it repairs nothing): an unsigned value, a
 *   value signed with a key the spoke does not list, and the good value with
 *   one byte flipped, each written straight into etcd under the hub's key,
 *   are refused (`unsigned`, `unknown_key`, `bad_signature` in
 *   GetConfigStatus and the rejection metric) while the last good projection
 *   stays in the spoke's effective view; the exact bytes of an older signed
 *   version written back are refused as `rollback`.
 * - The hub started again repairs the forged value (a signed one, new version).
 */
import { generateKeyPairSync } from "node:crypto";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService, ConfigView } from "../../gen/aether/registry/v1/config_service_pb.js";
import { SIGNATURE_FIELD, splitStoredValue } from "../../services/common/projection-signature.js";
import { fieldSpans } from "../../services/common/wire-fields.js";
import { originKeyPrefix, projectionKey } from "../../services/registrar/store/store-key.js";
import { keyIdOf } from "../../services/signing/key-algorithm.js";
import { parseSigningKey, signStoredValue } from "../../services/signing/signing-key.js";
import {
  type AgentProcess,
  type RoutesEntry,
  readSample,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
  stopAllRegistrars,
} from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("sig");
const SERVICE = "shop/checkout";
const TIMEOUT_MS = 20_000;

/** A new Ed25519 key pair: its PKCS#8 and SPKI PEMs and its key id. */
function newKeyPair() {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  return {
    privatePem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
    publicPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    id: keyIdOf(publicKey),
  };
}

const keyA = newKeyPair();
const keyB = newKeyPair();
const stranger = newKeyPair();

let dir: string;
let prefix: string;
let hub: RegistrarProcess | undefined;
let spoke: RegistrarProcess;
let agent: AgentProcess;
let routes: string;
let hubKeyFile: string;
let originKeysFile: string;

const writeOriginKeys = (pems: string[]) =>
  writeFile(originKeysFile, JSON.stringify({ origins: { hub: pems } }));

function startHub(): Promise<RegistrarProcess> {
  return startRegistrarProcess([
    ...["--cluster", "hub", "--control-cluster", "hub", "--store", "etcd"],
    ...["--etcd-endpoints", shared.etcd.endpoint, "--etcd-prefix", prefix],
    ...["--export-source", `dir:${routes}`, "--election-ttl", "2s"],
    ...["--signing-key-file", hubKeyFile],
  ]);
}

/** The key id the hub reports signing with (GetConfigStatus). */
async function hubSigningKeyId(): Promise<string | undefined> {
  if (hub === undefined) return undefined;
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: hub.url, httpVersion: "1.1" }),
  );
  return (await client.getConfigStatus({})).export?.signingKeyId;
}

const spokeClient = () =>
  createClient(ConfigService, createConnectTransport({ baseUrl: spoke.url, httpVersion: "1.1" }));

/** The version of the hub's SERVICE in the spoke's effective view, or undefined. */
async function effectiveVersion(): Promise<string | undefined> {
  const listed = await spokeClient().listAllConfig({
    view: ConfigView.EFFECTIVE,
    services: [SERVICE],
  });
  const entry = listed.projections.find((p) => p.originCluster === "hub");
  return entry?.version;
}

async function spokeMetric(sample: string): Promise<number> {
  const text = await (await fetch(`${spoke.url}/metrics`)).text();
  return readSample(text, sample) ?? 0;
}

const signatureRejections = async () =>
  (await spokeMetric(`aether_config_import_rejections_total{reason="unsigned"}`)) +
  (await spokeMetric(`aether_config_import_rejections_total{reason="unknown_key"}`)) +
  (await spokeMetric(`aether_config_import_rejections_total{reason="bad_signature"}`));

/** The agent's refusals of the signature and rollback kinds. */
async function agentRejections(): Promise<number> {
  let total = 0;
  for (const reason of ["unsigned", "unknown_key", "bad_signature", "rollback"]) {
    total += await agent.metric(`aether_config_import_rejections_total{reason="${reason}"}`);
  }
  return total;
}

/** An agent following the spoke, verifying with the spoke's origin keys, with a cache. */
const startAgent = () =>
  startAgentProcess([
    ...["--registrar", spoke.url, "--cluster", "spoke", "--deps", SERVICE],
    ...["--origin-keys", originKeysFile, "--require-signatures"],
    ...["--cache-dir", join(dir, "agent-cache")],
  ]);

/** SERVICE in the agent's route table (`/routes`), or undefined. */
async function agentEntry(): Promise<RoutesEntry | undefined> {
  return (await agent.routes()).find((e) => e.service === SERVICE);
}

/** Every value stored under the hub's origin, by key. */
async function hubValues(): Promise<Map<string, Buffer>> {
  const values = await shared.raw.getAll().prefix(originKeyPrefix(prefix, "hub")).buffers();
  return new Map(Object.entries(values).filter(([key]) => key.includes("/config/")));
}

/** Resolves once the spoke logs a read of its origin keys with `count` keys, after now. */
async function keysRead(count: number): Promise<void> {
  const from = spoke.logs.length;
  await spoke.waitForLog(
    (l) => l.msg === "origin keys read" && l.keys === count && spoke.logs.indexOf(l) >= from,
    TIMEOUT_MS,
  );
}

const serviceKey = () => projectionKey(prefix, "hub", SERVICE);
const storedValue = async () => (await shared.raw.get(serviceKey()).buffer()) as Buffer;
const keyIdIn = (value: Uint8Array) => splitStoredValue(value).signature?.keyId;
/** `value` without its signature record(s). */
function withoutSignature(value: Buffer): Buffer {
  const kept: Buffer[] = [];
  for (const span of fieldSpans(value)) {
    if (span === undefined) throw new Error("not a protobuf message");
    if (span.field !== SIGNATURE_FIELD) kept.push(value.subarray(span.start, span.end));
  }
  return Buffer.concat(kept);
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-signed-"));
  prefix = shared.freshPrefix();
  routes = join(dir, "routes");
  await cp("examples/mesh", routes, { recursive: true });
  hubKeyFile = join(dir, "hub-key.pem");
  originKeysFile = join(dir, "origin-keys.json");
  await writeFile(hubKeyFile, keyA.privatePem);
  await writeOriginKeys([keyA.publicPem]);
  hub = await startHub();
  spoke = await startSpokeRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    extra: [
      ...["--control-cluster", "hub", "--keepalive", "1s"],
      ...["--origin-keys", originKeysFile, "--require-signatures"],
    ],
  });
  await waitFor(
    async () => (await effectiveVersion()) !== undefined,
    TIMEOUT_MS,
    "the hub's SERVICE",
  );
  agent = await startAgent();
  await waitFor(
    async () => (await agentEntry())?.projection.signature?.keyId === keyA.id,
    TIMEOUT_MS,
    "SERVICE signed by key A at the agent",
  );
}, 60_000);

afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("signed projections between registrars", () => {
  it("the hub signs every projection it writes; the spoke verifies and serves them", async () => {
    const values = await hubValues();
    expect(values.size).toBeGreaterThan(1);
    for (const value of values.values()) expect(keyIdIn(value)).toBe(keyA.id);
    expect(await hubSigningKeyId()).toBe(keyA.id);
    const hubOrigin = (await spokeClient().getConfigStatus({})).origins.find(
      (o) => o.origin === "hub",
    );
    expect(hubOrigin?.signedProjections).toBe(values.size);
    expect((await spokeClient().getConfigStatus({})).rejections).toEqual([]);
    expect(await signatureRejections()).toBe(0);
  });

  it("rotates the hub's key without a rejection or a gap at the spoke and at its agent", async () => {
    const version = await effectiveVersion();
    const gaps: string[] = [];
    /** Every agent sample that lacked SERVICE or held it unsigned, and every signer seen. */
    const agentGaps: string[] = [];
    const signers: string[] = [];
    let sampling = true;
    const sample = async () => {
      if ((await effectiveVersion()) === undefined) gaps.push(new Date().toISOString());
      const entry = await agentEntry();
      const keyId = entry?.projection.signature?.keyId;
      if (keyId === undefined) agentGaps.push(`${new Date().toISOString()} ${entry?.version}`);
      else if (signers.at(-1) !== keyId) signers.push(keyId);
    };
    const sampler = (async () => {
      while (sampling) {
        await sample();
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    const agentKeys = (count: number) =>
      agent.waitForMetric("aether_config_agent_origin_keys", (v) => v === count, TIMEOUT_MS);
    try {
      await writeOriginKeys([keyA.publicPem, keyB.publicPem]);
      await keysRead(2);
      await agentKeys(2);
      await writeFile(hubKeyFile, keyB.privatePem);
      await waitFor(
        async () => [...(await hubValues()).values()].every((v) => keyIdIn(v) === keyB.id),
        TIMEOUT_MS,
        "every hub projection re-signed with key B",
      );
      expect(await hubSigningKeyId()).toBe(keyB.id);
      await waitFor(
        async () => (await agentEntry())?.projection.signature?.keyId === keyB.id,
        TIMEOUT_MS,
        "SERVICE signed by key B at the agent",
      );
      await writeOriginKeys([keyB.publicPem]);
      await keysRead(1);
      await agentKeys(1);
      // Re-signed under the same version: nothing new to route.
      expect(await effectiveVersion()).toBe(version);
      expect((await agentEntry())?.version).toBe(version);
    } finally {
      sampling = false;
      await sampler;
    }
    expect(gaps).toEqual([]);
    expect(agentGaps).toEqual([]);
    expect(signers).toEqual([keyA.id, keyB.id]);
    expect(await signatureRejections()).toBe(0);
    expect(await agentRejections()).toBe(0);
    expect((await spokeClient().getConfigStatus({})).rejections).toEqual([]);
  }, 60_000);

  it("the agent restarted after the rotation serves the re-signed projection from its cache", async () => {
    expect(await agent.stop()).toBe(0);
    agent = await startAgent();
    // Loaded before serving, and verified again with key B alone: nothing dropped.
    const restored = await agent.waitForLog((l) => l.msg === "serving the last-known cache");
    // The service and the hub's mesh record (examples/mesh has a MeshConfig).
    expect(restored.projections).toBe(2);
    expect(agent.logs.filter((l) => String(l.msg).startsWith("cached projection dropped"))).toEqual(
      [],
    );
    expect((await agentEntry())?.projection.signature?.keyId).toBe(keyB.id);
    expect(await agentRejections()).toBe(0);
  }, 30_000);

  it("refuses forgeries under the hub's key and keeps the last good projection", async () => {
    const older = await storedValue();
    const olderVersion = await effectiveVersion();
    // A new version of the content (a path changed), signed with key B.
    const manifest = join(routes, "shop", "checkout-routes.yaml");
    await writeFile(
      manifest,
      (await readFile(manifest, "utf8")).replace("value: /cart", "value: /basket"),
    );
    await waitFor(
      async () => (await effectiveVersion()) !== olderVersion,
      TIMEOUT_MS,
      "the new version at the spoke",
    );
    const good = await storedValue();
    const goodVersion = await effectiveVersion();
    expect(keyIdIn(good)).toBe(keyB.id);
    expect(await hub?.stop()).toBe(0);
    hub = undefined;

    const unsigned = withoutSignature(good);
    const strangerKey = parseSigningKey(stranger.privatePem, "stranger");
    const foreign = Buffer.from(signStoredValue(unsigned, "hub", strangerKey));
    const flipped = Buffer.from(good);
    const at = flipped.indexOf("/basket");
    flipped[at + 1] = (flipped[at + 1] as number) ^ 0x01;
    const forgeries: [string, Buffer][] = [
      ["unsigned", unsigned],
      ["unknown_key", foreign],
      ["bad_signature", flipped],
      ["rollback", older],
    ];
    for (const [reason, value] of forgeries) {
      await shared.raw.put(serviceKey()).value(value);
      await waitFor(
        async () =>
          (await spokeMetric(`aether_config_import_rejections_total{reason="${reason}"}`)) === 1,
        TIMEOUT_MS,
        `the ${reason} refusal`,
      );
      const status = await spokeClient().getConfigStatus({});
      expect(status.rejections.map((r) => [r.service, r.originCluster, r.reason])).toEqual([
        [SERVICE, "hub", reason],
      ]);
      expect(await effectiveVersion()).toBe(goodVersion);
    }
  }, 60_000);

  it("the hub started again repairs the replayed value with a new signed version", async () => {
    const before = await effectiveVersion();
    hub = await startHub();
    await waitFor(
      async () => (await spokeClient().getConfigStatus({})).rejections.length === 0,
      TIMEOUT_MS,
      "the repair",
    );
    expect(keyIdIn(await storedValue())).toBe(keyB.id);
    expect((await effectiveVersion()) ?? "").not.toBe(before);
  }, 60_000);
});
