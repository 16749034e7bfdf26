/**
 * `aether-registrar` as an OS process with mutual TLS on its main port and
 * the admin port in plain HTTP, with certificates this test makes: the
 * agent's SVID lists and watches; a client without a certificate is refused
 * and counted on the admin port; SIGTERM drains an open stream and exits 0.
 * Files that cannot serve stop it at start (exit 1, naming the problem), and
 * a certificate without its key is a usage error (exit 2).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { httpProjection, removeSeedFiles, startSeededRegistrar } from "../interop/fixtures.js";
import { connectClient, registrarTlsFlags } from "../support/mtls-clients.js";
import { mainEntry } from "../support/process-entry.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { runCommand } from "../support/test-http-server.js";
import { AGENT_ID, createSpiffePki, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";
import { recordWatch } from "../support/watch-recorder.js";

const MAIN = resolve(import.meta.dirname, "../../services/registrar/main.ts");

let dir: string;
let pki: SpiffePki;
let registrar: RegistrarProcess;
let adminUrl: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-mtls-process-"));
  pki = await createSpiffePki(dir);
  registrar = await startSeededRegistrar(
    "hub",
    [httpProjection("shop/checkout", "2026-11-29T12:00:00.000000000Z")],
    ["--admin-listen", "127.0.0.1:0", "--log-level", "debug", ...registrarTlsFlags(pki)],
  );
  const serving = await registrar.waitForLog((line) => line.msg === "registrar serving");
  adminUrl = serving.adminUrl as string;
}, 60_000);

afterAll(async () => {
  await stopAllRegistrars();
  await removeSeedFiles();
  await rm(dir, { recursive: true, force: true });
});

/** Runs the registrar's main with `args` to its exit. */
function runRegistrar(args: readonly string[]) {
  return runCommand(process.execPath, [...mainEntry(MAIN), "--cluster", "hub", ...args]);
}

describe("aether-registrar with mutual TLS", () => {
  it("serves the agent's SVID over https:// and logs the material it loaded", async () => {
    expect(registrar.url).toMatch(/^https:\/\//);
    expect(adminUrl).toMatch(/^http:\/\//);
    const client = connectClient(registrar.url, pki, pki.client);
    const listed = await client.listAllConfig({});
    expect(listed.projections.map((p) => p.service)).toEqual(["shop/checkout"]);
    const loaded = await registrar.waitForLog((line) => line.msg === "TLS material loaded");
    expect(loaded).toMatchObject({
      serial: pki.server.serial,
      trustDomains: ["hub.mesh", "east.mesh"],
    });
    expect(JSON.stringify(registrar.logs)).not.toMatch(/PRIVATE KEY|BEGIN/);
    // Each request's debug line names the caller it allowed.
    const request = await registrar.waitForLog(
      (line) => line.msg === "request" && String(line.url).endsWith("/ListAllConfig"),
    );
    expect(request).toMatchObject({ peer: AGENT_ID, status: 200 });
  });

  it("refuses a client without a certificate and counts it on the plain-HTTP admin port", async () => {
    const refused = 'aether_config_tls_handshake_failures_total{reason="no_certificate"}';
    expect(await scrapeMetric(adminUrl, refused)).toBe(0);
    await expect(connectClient(registrar.url, pki, undefined).listAllConfig({})).rejects.toThrow();
    await waitFor(async () => (await scrapeMetric(adminUrl, refused)) === 1, 5_000, "the count");
    expect((await fetch(`${adminUrl}/readyz`)).status).toBe(200);
  });

  it("drains an open watch stream on SIGTERM and exits 0", async () => {
    const watch = recordWatch(connectClient(registrar.url, pki, pki.client), {});
    await watch.until((events) => events.length >= 2, 10_000, "snapshot and SYNCED");
    expect(await registrar.stop()).toBe(0);
    expect(await watch.ended).toBeUndefined();
  });
});

describe("aether-registrar's TLS files at start", () => {
  it("exits 1 naming the problem when the key is not the certificate's", async () => {
    const result = await runRegistrar([
      ...["--listen", "127.0.0.1:0"],
      ...registrarTlsFlags(pki, { serving: { ...pki.server, key: pki.client.key } }),
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/aether-registrar: TLS material refused: .*key/);
    expect(result.stderr).not.toMatch(/BEGIN|PRIVATE KEY/);
  });

  it("exits 2 with usage for a certificate without its key", async () => {
    const result = await runRegistrar(["--tls-cert-file", pki.server.cert]);
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/^aether-registrar: --tls-cert-file needs --tls-key-file\n/);
    expect(result.stderr).toContain("--trust-domain-bundle TRUST_DOMAIN=PATH");
  });
});
