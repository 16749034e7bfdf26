/**
 * Signatures verified end to end by the agent, with real processes: a real
 * etcd, a spoke registrar that verifies nothing (no `--origin-keys`, no
 * `--require-signatures`: it serves whatever the store holds, as a
 * compromised registrar would) and an agent process pointed straight at it
 * with `--origin-keys` and `--require-signatures` and a last-known cache.
 * The hub's projection of shop/a is written into etcd as the hub's export
 * controller would store it, signed with a key made here; then, under the
 * hub's key, an unsigned value, one signed with a key the agent does not
 * know, the good one with one byte flipped, and the exact stored bytes of an
 * older signed version: each is refused with its reason (metric and log)
 * while the good projection stays in the agent's route table, the rollback
 * also after the agent restarts (whose cache kept the signed projection so
 * that it verifies again). A key added to the file makes the agent take a
 * projection it refused as `unknown_key`; a bad re-read of the file keeps the
 * keys and is counted; a bad file at start stops the agent naming the file.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import type { SigningKey } from "../../services/signing/signing-key.js";
import {
  type AgentProcess,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { mainEntry } from "../support/process-entry.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { newSigningKey, originKeysText, signedValue } from "../support/signing-keys.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("sig");
const rejections = (reason: string) => `aether_config_import_rejections_total{reason="${reason}"}`;
const hubKey = newSigningKey();
const strangerKey = newSigningKey();
const rotatedKey = newSigningKey();
let prefix: string;
let dir: string;
let keysFile: string;
let cacheDir: string;
let registrar: RegistrarProcess;
let agent: AgentProcess;
/** The exact stored bytes of hub's signed shop/a at version 1. */
let oldBytes: Uint8Array;

/** hub's projection of `service` at version `n`, as its export controller stores it (unsigned). */
const hubProjection = (service: string, n: number) =>
  makeProjection(service, { origin: "hub", version: versionAt(n) });
/** Writes `value` under hub's key of `service`, as anyone who can write the store could. */
const write = (service: string, value: Uint8Array) =>
  shared.raw.put(projectionKey(prefix, "hub", service)).value(Buffer.from(value));
const signed = (service: string, n: number, key: SigningKey) =>
  signedValue(hubProjection(service, n), "hub", key);

/** Replaces the keys file atomically (a rename, as a ConfigMap update or an editor does). */
async function writeKeys(text: string): Promise<void> {
  await writeFile(`${keysFile}.tmp`, text);
  await rename(`${keysFile}.tmp`, keysFile);
}

const startAgent = () =>
  startAgentProcess([
    ...["--registrar", registrar.url, "--cluster", "spoke", "--deps", "shop/a,shop/b"],
    ...["--cache-dir", cacheDir, "--origin-keys", keysFile, "--require-signatures"],
    ...["--backoff-max", "500ms"],
  ]);

const startRegistrar = (listen?: string) =>
  startSpokeRegistrar({
    endpoint: shared.etcd.endpoint,
    prefix,
    extra: ["--keepalive", "1s", ...(listen === undefined ? [] : ["--listen", listen])],
  });

/** The version of `service` in the agent's route table, or undefined. */
async function agentVersion(service: string): Promise<string | undefined> {
  return (await agent.routes()).find((e) => e.service === service)?.version;
}

/** Writes `value` as hub's shop/a and waits until the agent refused it as `reason`. */
async function refused(value: Uint8Array, reason: string): Promise<void> {
  await write("shop/a", value);
  await agent.waitForMetric(rejections(reason), (v) => v === 1, 15_000);
  await agent.waitForLog(
    (l) => l.reason === reason && String(l.msg).startsWith("projection rejected"),
  );
  expect(await agentVersion("shop/a")).toBe(versionAt(2));
}

beforeAll(async () => {
  prefix = shared.freshPrefix();
  dir = await mkdtemp(join(tmpdir(), "aether-agent-signatures-"));
  keysFile = join(dir, "origin-keys.json");
  cacheDir = join(dir, "cache");
  await writeKeys(originKeysText({ hub: [hubKey] }));
  oldBytes = signed("shop/a", 1, hubKey);
  await write("shop/a", oldBytes);
  await write("shop/a", signed("shop/a", 2, hubKey));
  registrar = await startRegistrar();
  agent = await startAgent();
  await waitFor(async () => (await agentVersion("shop/a")) === versionAt(2), 15_000, "v2");
}, 60_000);
afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("the agent verifies signatures end to end", () => {
  it("takes the good signed projection", async () => {
    expect(await agent.metric("aether_config_agent_origin_keys")).toBe(1);
    for (const reason of ["unsigned", "unknown_key", "bad_signature", "rollback"]) {
      expect(await agent.metric(rejections(reason))).toBe(0);
    }
  });

  it("refuses an unsigned value served by the registrar: unsigned, and keeps the good one", async () => {
    await refused(toBinary(ServiceConfigProjectionSchema, hubProjection("shop/a", 3)), "unsigned");
  }, 30_000);

  it("refuses a value signed with a key --origin-keys does not list: unknown_key", async () => {
    await refused(signed("shop/a", 3, strangerKey), "unknown_key");
  }, 30_000);

  it("refuses the good value with one byte flipped: bad_signature", async () => {
    const good = signed("shop/a", 3, hubKey);
    const at = Buffer.from(good).indexOf("a-route") + 2;
    expect(at).toBeGreaterThan(1);
    const flipped = good.slice();
    flipped[at] = (flipped[at] as number) ^ 1; // a-route becomes a-soute
    await refused(flipped, "bad_signature");
  }, 30_000);

  it("refuses the exact stored bytes of an older signed version: rollback, also after the agent restarts", async () => {
    // The registrar refuses it itself (it holds marks); restarted, it forgets them and serves it.
    await write("shop/a", oldBytes);
    const listen = new URL(registrar.url).host;
    expect(await registrar.stop()).toBe(0);
    registrar = await startRegistrar(listen);
    await write("shop/a", oldBytes);
    await agent.waitForMetric(rejections("rollback"), (v) => v === 1, 15_000);
    expect(await agentVersion("shop/a")).toBe(versionAt(2));

    expect(await agent.stop()).toBe(0);
    agent = await startAgent();
    // Served from the cache at once: the signed projection verified again after the restart.
    expect(await agentVersion("shop/a")).toBe(versionAt(2));
    await write("shop/a", oldBytes);
    await agent.waitForMetric(rejections("rollback"), (v) => v === 1, 15_000);
    expect(await agentVersion("shop/a")).toBe(versionAt(2));
    expect(await agent.metric(rejections("bad_signature"))).toBe(0);
    expect(await agent.metric(rejections("unsigned"))).toBe(0);
  }, 60_000);

  it("a bad re-read of --origin-keys keeps the keys and is counted; a key added lets through what it refused as unknown_key", async () => {
    await write("shop/b", signed("shop/b", 1, rotatedKey));
    await agent.waitForMetric(rejections("unknown_key"), (v) => v === 1, 15_000);
    expect(await agentVersion("shop/b")).toBeUndefined();

    await writeKeys("origins: [");
    const refusedReloads = `aether_config_agent_origin_keys_reloads_total{result="refused"}`;
    await agent.waitForMetric(refusedReloads, (v) => v === 1, 15_000);
    const warning = await agent.waitForLog(
      (l) => l.msg === "origin keys file refused; keeping the keys in force",
    );
    expect(warning.file).toBe(keysFile);
    expect(await agent.metric("aether_config_agent_origin_keys")).toBe(1);

    await writeKeys(originKeysText({ hub: [hubKey, rotatedKey] }));
    await waitFor(async () => (await agentVersion("shop/b")) === versionAt(1), 15_000, "shop/b");
    expect(await agent.metric("aether_config_agent_origin_keys")).toBe(2);
    expect(await agent.metric(`aether_config_agent_origin_keys_reloads_total{result="ok"}`)).toBe(
      1,
    );
    expect(await agentVersion("shop/a")).toBe(versionAt(2));
    expect(JSON.stringify(agent.logs)).not.toContain(hubKey.publicKeyPem.split("\n")[1]);
  }, 45_000);
  it("a key added while the agent was down: the restarted agent takes what it refused before (a snapshot, not a resume)", async () => {
    const lateKey = newSigningKey();
    await write("shop/b", signed("shop/b", 2, lateKey));
    await agent.waitForMetric(rejections("unknown_key"), (v) => v === 2, 15_000);
    expect(await agentVersion("shop/b")).toBe(versionAt(1));
    // A later accepted change: the cache (flushed by the stop) is at a revision past the refused value.
    await write("shop/a", signed("shop/a", 4, hubKey));
    await waitFor(async () => (await agentVersion("shop/a")) === versionAt(4), 15_000, "a@4");
    expect(await agent.stop()).toBe(0);
    await writeKeys(originKeysText({ hub: [hubKey, rotatedKey, lateKey] }));
    agent = await startAgent();
    await waitFor(async () => (await agentVersion("shop/b")) === versionAt(2), 15_000, "shop/b@2");
    expect(await agentVersion("shop/a")).toBe(versionAt(4));
  }, 45_000);

  it("a key removed revokes nothing held: what it signed stays until its origin replaces it, through later updates of other services", async () => {
    // shop/b@2 is signed by lateKey; the file stops listing that key.
    await writeKeys(originKeysText({ hub: [hubKey, rotatedKey] }));
    await agent.waitForMetric("aether_config_agent_origin_keys", (v) => v === 2, 15_000);
    // An update of another service re-decides the whole table.
    await write("shop/a", signed("shop/a", 5, hubKey));
    await waitFor(async () => (await agentVersion("shop/a")) === versionAt(5), 15_000, "a@5");
    expect(await agentVersion("shop/b")).toBe(versionAt(2));
    // Its origin's next value, signed with a key still listed, replaces it.
    await write("shop/b", signed("shop/b", 3, rotatedKey));
    await waitFor(async () => (await agentVersion("shop/b")) === versionAt(3), 15_000, "b@3");
  }, 45_000);
});

describe("a bad --origin-keys file at start", () => {
  it("stops the agent with an error naming the file, not its contents", async () => {
    const bad = join(dir, "bad-keys.json");
    const body = hubKey.publicKeyPem.split("\n")[1] as string;
    await writeFile(bad, originKeysText({ hub: [hubKey] }).replace(body, body.slice(0, 20)));
    const child = spawn(
      process.execPath,
      [
        ...mainEntry(resolve(import.meta.dirname, "../../clients/agent/main.ts")),
        ...["--registrar", registrar.url, "--cluster", "spoke", "--deps", "shop/a"],
        ...["--origin-keys", bad, "--require-signatures", "--listen", "127.0.0.1:0"],
      ],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    let stderr = "";
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const [code] = await once(child, "exit");
    expect(code).toBe(1);
    expect(stderr).toContain(`--origin-keys: ${bad}: origins.hub[0] does not parse`);
    expect(stderr).not.toContain(body.slice(0, 20));
    expect(stderr).not.toContain("agent serving");
  }, 30_000);
});
