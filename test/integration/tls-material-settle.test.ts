/**
 * The registrar's TLS files rewritten IN PLACE, one after another, the way
 * SPIRE's spiffe-helper does it (no symlink swap): the certificate, then
 * the key, then the bundle (first cut short, then whole), with pauses
 * between the writes longer than the old 100 ms debounce and shorter than
 * the 250 ms settle. The registrar takes the new set once, counts no
 * refusal and logs no warning, and the next handshake presents the new
 * serial and trusts the new bundle. A pair that really mismatches is still
 * refused and counted, once, after the retries. aetherctl's one-shot read
 * started between two writes waits for the set too.
 */
import { appendFile, copyFile, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as pause } from "node:timers/promises";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import { parseRegistrarFlags } from "../../services/registrar/registrar-flags.js";
import { MATERIAL_REJECTION_REASONS } from "../../services/runtime/tls/material-piece.js";
import { loadTlsMaterial } from "../../services/runtime/tls/material-read.js";
import { DEFAULT_SETTLE_POLICY } from "../../services/runtime/tls/material-settle.js";
import { captureLogger } from "../support/capture-logger.js";
import { connectClient, handshake } from "../support/mtls-clients.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import {
  AGENT_ID,
  createSpiffePki,
  REGISTRAR_ID,
  type SpiffePki,
} from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

/** The writer's pause between two files: past the old debounce (100 ms), inside the settle. */
const WRITE_GAP_MS = 150;

let dir: string;
let pki: SpiffePki;
let renewed: TestSvid;
let registrar: Registrar;
let adminUrl: string;
let url: string;
let port: number;
const log = captureLogger();
/** The files the registrar reads, written in place: `<dir>/svid/{tls.crt,tls.key,east.pem}`. */
const files = { cert: "", key: "", east: "" };

const metric = (sample: string) => scrapeMetric(adminUrl, sample);
/** Every refused re-read the registrar counted, whatever the reason. */
const refusals = async () => {
  let total = 0;
  for (const reason of MATERIAL_REJECTION_REASONS) {
    total += (await metric(`aether_config_tls_material_rejections_total{reason="${reason}"}`)) ?? 0;
  }
  return total;
};
const warnings = () => log.withMessage("TLS material refused: the previous material stays in use");

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-tls-settle-"));
  pki = await createSpiffePki(dir);
  renewed = await issueSvid(pki.hubCa, dir, "server-renewed", {
    uris: [REGISTRAR_ID],
    otherSans: ["DNS:localhost", "IP:127.0.0.1"],
  });
  Object.assign(files, {
    cert: join(dir, "tls.crt"),
    key: join(dir, "tls.key"),
    east: join(dir, "east.pem"),
  });
  await copyFile(pki.server.cert, files.cert);
  await copyFile(pki.server.key, files.key);
  await copyFile(pki.bundles.eastPem, files.east);
  const config = parseRegistrarFlags([
    ...["--cluster", "hub", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"],
    ...["--tls-cert-file", files.cert, "--tls-key-file", files.key],
    ...["--trust-domain-bundle", `hub.mesh=${pki.bundles.hubJwks}`],
    ...["--trust-domain-bundle", `east.mesh=${files.east}`],
    ...["--authorize", AGENT_ID],
  ]);
  if (config === "help") throw new Error("help");
  registrar = createRegistrar({ config, logger: log.logger, processMetrics: false });
  url = (await registrar.start()).url;
  adminUrl = registrar.adminAddress?.url as string;
  port = Number(new URL(url).port);
}, 60_000);

afterAll(async () => {
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

describe("TLS files rewritten in place, one after another", () => {
  it("takes the new certificate, key and bundle as one set: no refusal counted, no warning", async () => {
    expect((await handshake(port, pki, pki.client)).serverSerial).toBe(pki.server.serial);
    // The rogue CA joins east.mesh's bundle; the bundle is first seen cut inside a PEM block.
    const bundle = `${await readFile(pki.bundles.eastPem, "utf8")}${await readFile(pki.rogueCa.cert, "utf8")}`;
    const cut = bundle.length - 200;

    await writeFile(files.cert, await readFile(renewed.cert));
    await pause(WRITE_GAP_MS); // the writer's pace, not a wait for a condition
    await writeFile(files.key, await readFile(renewed.key));
    await pause(WRITE_GAP_MS);
    await writeFile(files.east, bundle.slice(0, cut));
    await pause(WRITE_GAP_MS);
    await appendFile(files.east, bundle.slice(cut));

    await waitFor(
      async () => (await metric("aether_config_tls_material_updates_total")) === 1,
      10_000,
      "the new set to be taken",
    );
    expect((await handshake(port, pki, pki.client)).serverSerial).toBe(renewed.serial);
    // The whole bundle was taken: the rogue CA's SVID of the agent's ID is trusted now.
    expect((await connectClient(url, pki, pki.unknownCa).getConfigStatus({})).cluster).toBe("hub");
    // One rotation, taken whole: nothing refused on the way, nothing taken in between.
    expect(await refusals()).toBe(0);
    expect(warnings()).toEqual([]);
    expect(log.withMessage("TLS material rotated: new handshakes use it")).toHaveLength(1);
  });

  it("still refuses a pair that really mismatches, once, after the retries", async () => {
    const refused = `aether_config_tls_material_rejections_total{reason="key_mismatch"}`;
    const written = Date.now();
    await writeFile(files.cert, await readFile(pki.server.cert)); // the old certificate, not its key
    await waitFor(async () => (await metric(refused)) === 1, 15_000, "the refusal to be counted");
    const { settleMs, retries } = DEFAULT_SETTLE_POLICY;
    // Quiet once, then read 1 + retries times, a settle apart.
    expect(Date.now() - written).toBeGreaterThanOrEqual(settleMs * (retries + 1));
    expect(warnings()).toHaveLength(1);
    expect(warnings()[0]).toMatchObject({ piece: "identity", reason: "key_mismatch" });
    expect(await refusals()).toBe(1);
    expect((await handshake(port, pki, pki.client)).serverSerial).toBe(renewed.serial);
  });

  it("lets aetherctl's one-shot read started between two writes wait for the whole pair", async () => {
    // The certificate now matches no key on disk; the key follows while the read settles.
    const reading = loadTlsMaterial({
      certFile: files.cert,
      keyFile: files.key,
      bundleFiles: new Map([["hub.mesh", pki.bundles.hubJwks]]),
    });
    await pause(WRITE_GAP_MS);
    await writeFile(files.key, await readFile(pki.server.key));
    expect((await reading).identity?.serial).toBe(pki.server.serial);
  });
});
