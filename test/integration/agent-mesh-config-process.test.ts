/**
 * The hub's mesh defaults reach an agent's data plane, with real processes
 * over a real etcd: a hub registrar (`--control-cluster hub`, signing)
 * exports a manifest directory holding a MeshConfig named `default`, a
 * spoke registrar serves it, and an agent process (trusting only the hub,
 * requiring signatures) that was never told about `@mesh` carries it as its
 * `/routes`' `meshDefaults`; it follows an edit of the MeshConfig and its
 * removal, and the services' entries stay as they were.
 */
import { generateKeyPairSync } from "node:crypto";
import { cp, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  startAgentProcess,
  startSpokeRegistrar,
  stopAllAgents,
} from "../support/agent-process.js";
import { useSharedEtcd } from "../support/etcd-suite.js";
import { startExportRegistrar } from "../support/export-store.js";
import { EXPORT_FIXTURES } from "../support/memory-source.js";
import { stopAllRegistrars } from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const shared = useSharedEtcd("agent-mesh");
const TIMEOUT_MS = 20_000;
const { privateKey, publicKey } = generateKeyPairSync("ed25519");

/** A MeshConfig named default with `timeout` as its request timeout and a retry policy. */
const meshConfig = (timeout: string) => `apiVersion: mesh.aether.dev/v1alpha1
kind: MeshConfig
metadata:
  name: default
spec:
  requestTimeout: ${timeout}
  retry: { codes: [503], attempts: 2 }
`;

/** The agent's `/routes` document (the fields this test reads). */
interface Routes {
  readonly meshDefaults?: {
    readonly source: string;
    readonly origin: string;
    readonly version: string;
    readonly config: { readonly name?: string; readonly requestTimeout?: string };
  };
  readonly services: { readonly service: string; readonly version: string }[];
}

let dir: string;
let agent: AgentProcess;
const meshFile = () => join(dir, "routes", "mesh-config.yaml");

async function routes(): Promise<Routes> {
  const { status, body } = await agent.get("/routes");
  expect(status).toBe(200);
  return JSON.parse(body) as Routes;
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-agent-mesh-"));
  const prefix = shared.freshPrefix();
  await cp(EXPORT_FIXTURES, join(dir, "routes"), { recursive: true });
  await writeFile(meshFile(), meshConfig("15s"));
  const keyFile = join(dir, "hub-key.pem");
  const originKeys = join(dir, "origin-keys.json");
  await writeFile(keyFile, privateKey.export({ type: "pkcs8", format: "pem" }).toString());
  const publicPem = publicKey.export({ type: "spki", format: "pem" }).toString();
  await writeFile(originKeys, JSON.stringify({ origins: { hub: [publicPem] } }));
  const endpoint = shared.etcd.endpoint;
  await startExportRegistrar({
    endpoint,
    prefix,
    dir: join(dir, "routes"),
    extra: ["--control-cluster", "hub", "--signing-key-file", keyFile],
  });
  const spoke = await startSpokeRegistrar({
    endpoint,
    prefix,
    extra: ["--control-cluster", "hub", "--origin-keys", originKeys, "--require-signatures"],
  });
  agent = await startAgentProcess([
    ...["--registrar", spoke.url, "--cluster", "spoke", "--control-cluster", "hub"],
    ...["--deps", "shop/checkout", "--origin-keys", originKeys, "--require-signatures"],
  ]);
}, 60_000);

afterAll(async () => {
  await stopAllAgents();
  await stopAllRegistrars();
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
});

describe("agent process: the hub's mesh defaults", () => {
  it("carries the hub's MeshConfig as /routes' meshDefaults, follows an edit and a removal", async () => {
    await waitFor(
      async () => (await routes()).meshDefaults !== undefined,
      TIMEOUT_MS,
      "the mesh defaults at the agent",
    );
    const first = await routes();
    expect(first.meshDefaults).toMatchObject({
      source: "imported",
      origin: "hub",
      config: { name: "default", requestTimeout: "15s", retry: { codes: [503], attempts: 2 } },
    });
    expect(first.services.map((s) => s.service)).toEqual(["shop/checkout"]);
    const checkoutVersion = first.services[0]?.version;

    await writeFile(meshFile(), meshConfig("30s"));
    await waitFor(
      async () => (await routes()).meshDefaults?.config.requestTimeout === "30s",
      TIMEOUT_MS,
      "the edit at the agent",
    );
    const edited = await routes();
    expect((edited.meshDefaults?.version ?? "") > (first.meshDefaults?.version ?? "")).toBe(true);
    expect(edited.services.map((s) => s.version)).toEqual([checkoutVersion]);

    await rm(meshFile());
    await waitFor(
      async () => (await routes()).meshDefaults === undefined,
      TIMEOUT_MS,
      "the removal at the agent",
    );
    expect((await routes()).services.map((s) => [s.service, s.version])).toEqual([
      ["shop/checkout", checkoutVersion],
    ]);
  });
});
