/**
 * Rotation of the registrar's serving certificate without a restart, with
 * certificates this test makes: the files are symlinks into a generation
 * directory swapped the way SPIRE's helper and the SPIFFE CSI drivers do
 * it. A WatchConfig stream open across the swap keeps receiving changes,
 * the next handshake presents the new serial and the expiry gauge follows;
 * a mismatched key written in place is refused and counted, logged without
 * key material, and the last good certificate keeps being served. A
 * rotated bundle decides the next handshake: a CA taken out of it no longer
 * vouches for its clients, and the one put in does.
 */

import { X509Certificate } from "node:crypto";
import {
  copyFile,
  mkdir,
  mkdtemp,
  readFile,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import { parseRegistrarFlags } from "../../services/registrar/registrar-flags.js";
import { captureLogger } from "../support/capture-logger.js";
import { connectClient, handshake, registrarTlsFlags } from "../support/mtls-clients.js";
import { makeProjection } from "../support/projections.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import { createSpiffePki, REGISTRAR_ID, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";
import { recordWatch } from "../support/watch-recorder.js";

const DAY = 86_400_000;

let dir: string;
let pki: SpiffePki;
let registrar: Registrar;
let url: string;
let adminUrl: string;
let port: number;
const log = captureLogger();
/** The files the registrar is given: `<dir>/svid/live/{cert,key}.pem`, `live` a symlink. */
let live: TestSvid;

/** Copies `svid` into a new generation directory and swaps the `live` link to it. */
async function publish(generation: string, svid: TestSvid): Promise<void> {
  const target = join(dir, "svid", generation);
  await mkdir(target, { recursive: true });
  await copyFile(svid.cert, join(target, "cert.pem"));
  await copyFile(svid.key, join(target, "key.pem"));
  const next = join(dir, "svid", "live.next");
  await symlink(generation, next);
  await rename(next, join(dir, "svid", "live"));
}

const metric = (sample: string) => scrapeMetric(adminUrl, sample);

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-mtls-rotation-"));
  pki = await createSpiffePki(dir);
  await publish("gen-1", pki.server);
  live = {
    cert: join(dir, "svid", "live", "cert.pem"),
    key: join(dir, "svid", "live", "key.pem"),
    serial: pki.server.serial,
  };
  const config = parseRegistrarFlags([
    ...["--cluster", "hub", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"],
    ...registrarTlsFlags(pki, { serving: live }),
  ]);
  if (config === "help") throw new Error("help");
  registrar = createRegistrar({ config, logger: log.logger, processMetrics: false });
  url = (await registrar.start()).url;
  adminUrl = registrar.adminAddress?.url as string;
  port = Number(new URL(url).port);
  await registrar.cache.whenSynced();
}, 60_000);

afterAll(async () => {
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("rotating the registrar's serving certificate", () => {
  it("keeps an open WatchConfig stream, and the next handshake presents the new serial", async () => {
    expect((await handshake(port, pki, pki.client)).serverSerial).toBe(pki.server.serial);
    const watch = recordWatch(connectClient(url, pki, pki.client), {});
    await watch.until((events) => events.length > 0, 10_000, "SYNCED");

    const renewed = await issueSvid(pki.hubCa, dir, "server-renewed", {
      uris: [REGISTRAR_ID],
      otherSans: ["DNS:localhost", "IP:127.0.0.1"],
      notAfter: new Date(Date.now() + 2 * DAY),
    });
    expect(renewed.serial).not.toBe(pki.server.serial);
    await publish("gen-2", renewed);
    await waitFor(
      async () => (await metric("aether_config_tls_material_updates_total")) === 1,
      15_000,
      "the rotation to be taken",
    );

    expect((await handshake(port, pki, pki.client)).serverSerial).toBe(renewed.serial);
    const notAfter = Date.parse(new X509Certificate(await readFile(renewed.cert)).validTo);
    expect(await metric("aether_config_tls_certificate_expiry_timestamp_seconds")).toBe(
      Math.floor(notAfter / 1000),
    );
    // The stream opened before the swap is still served.
    await registrar.store.put(makeProjection("shop/after-rotation"));
    await watch.until(
      (events) => events.some((e) => e.service === "shop/after-rotation"),
      10_000,
      "the change on the old stream",
    );
    expect(watch.done).toBe(false);
    await watch.cancel();
    expect(log.withMessage("TLS material rotated: new handshakes use it")).toHaveLength(1);
  });

  it("refuses a mismatched key written in place, counts it and keeps the last good pair", async () => {
    const before = (await handshake(port, pki, pki.client)).serverSerial;
    const refused = `aether_config_tls_material_rejections_total{reason="key_mismatch"}`;
    expect(await metric(refused)).toBe(0);
    // The agent's key, not the serving certificate's.
    await writeFile(join(dir, "svid", "gen-2", "key.pem"), await readFile(pki.client.key));
    await waitFor(async () => (await metric(refused)) === 1, 15_000, "the refusal to be counted");

    expect((await handshake(port, pki, pki.client)).serverSerial).toBe(before);
    const client = connectClient(url, pki, pki.client);
    expect((await client.getConfigStatus({})).cluster).toBe("hub");
    const [warning] = log.withMessage("TLS material refused: the previous material stays in use");
    expect(warning).toMatchObject({ piece: "identity", reason: "key_mismatch" });
    expect(JSON.stringify(log.lines)).not.toMatch(/PRIVATE KEY|BEGIN/);
  });

  it("applies a rotated bundle to the next handshake: a CA taken out of it no longer vouches", async () => {
    const updates = (await metric("aether_config_tls_material_updates_total")) ?? 0;
    // east.mesh's bundle now holds the rogue CA instead of east's root, written aside and renamed over.
    const next = `${pki.bundles.eastPem}.next`;
    await copyFile(pki.rogueCa.cert, next);
    await rename(next, pki.bundles.eastPem);
    await waitFor(
      async () => (await metric("aether_config_tls_material_updates_total")) === updates + 1,
      15_000,
      "the bundle rotation to be taken",
    );
    const refused = `aether_config_tls_handshake_failures_total{reason="untrusted_chain"}`;
    const before = (await metric(refused)) ?? 0;
    await expect(connectClient(url, pki, pki.client).getConfigStatus({})).rejects.toThrow();
    await waitFor(async () => (await metric(refused)) === before + 1, 5_000, "the refusal");
    // The rogue CA's SVID of the same ID is verified now (and --authorize allows the ID).
    const status = await connectClient(url, pki, pki.unknownCa).getConfigStatus({});
    expect(status.cluster).toBe("hub");
  });
});
