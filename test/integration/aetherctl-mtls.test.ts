/**
 * aetherctl against a registrar serving mutual TLS (issue 13, client side),
 * in process over real loopback sockets with certificates this test makes
 * (openssl): it lists with the agent's SVID and the registrar's SPIFFE ID
 * checked (or its host name); a registrar with another SPIFFE ID is
 * refused; a client without a certificate, one with an unknown CA, or one
 * denied by `--authorize` gets one clear line and exit 1. The environment
 * alone can say all of it ($AETHER_TLS_CERT_FILE and the rest, as
 * deploy/components/mtls sets them in a pod).
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runAetherctlInProcess as aetherctl } from "../support/aetherctl-in-process.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { registrarTlsFlags } from "../support/mtls-clients.js";
import { makeProjection } from "../support/projections.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import { createSpiffePki, REGISTRAR_ID, type SpiffePki } from "../support/test-spiffe-pki.js";

const INTRUDER_ID = "spiffe://east.mesh/ns/other/sa/intruder";

let dir: string;
let pki: SpiffePki;
let intruder: TestSvid;
let registrar: TestRegistrar;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-aetherctl-mtls-"));
  pki = await createSpiffePki(dir);
  intruder = await issueSvid(pki.eastCa, dir, "intruder", { uris: [INTRUDER_ID] });
  registrar = await startTestRegistrar(["--cluster", "hub", ...registrarTlsFlags(pki)]);
  await registrar.registrar.store.put(makeProjection("shop/cart"));
}, 60_000);

afterAll(async () => {
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The TLS flags with `svid` (none when undefined) and both bundles; the registrar's ID checked unless `id` is null. */
function tlsFlags(svid: TestSvid | undefined, id: string | null = REGISTRAR_ID): string[] {
  return [
    ...["--registrar", registrar.url, "--timeout", "5s"],
    ...(svid === undefined ? [] : ["--tls-cert-file", svid.cert, "--tls-key-file", svid.key]),
    ...["--trust-domain-bundle", `hub.mesh=${pki.bundles.hubJwks}`],
    ...["--trust-domain-bundle", `east.mesh=${pki.bundles.eastPem}`],
    ...(id === null ? [] : ["--registrar-spiffe-id", id]),
  ];
}

describe("aetherctl over mutual TLS", () => {
  it("lists with the agent's SVID, the registrar's SPIFFE ID checked", async () => {
    const result = await aetherctl(["list", "-o", "json", ...tlsFlags(pki.client)]);
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).projections[0].service).toBe("shop/cart");
  });

  it("watches over TLS: the snapshot, SYNCED, then a change, until Ctrl-C", async () => {
    const interrupt = new AbortController();
    let putDone = false;
    const run = aetherctl(["watch", ...tlsFlags(pki.client)], {
      signal: interrupt.signal,
      onStdout: (printed) => {
        if (printed.includes("SYNCED") && !putDone) {
          putDone = true;
          void registrar.registrar.store.put(makeProjection("shop/pay"));
        }
        if (printed.includes("shop/pay")) interrupt.abort();
      },
    });
    const result = await run;
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(
      /SNAPSHOT\s+\d+\s+shop\/cart[\s\S]*SYNCED[\s\S]*UPSERT\s+\d+\s+shop\/pay/,
    );
  });

  it("checks the host name against the certificate without --registrar-spiffe-id", async () => {
    const result = await aetherctl(["get", "shop/cart", ...tlsFlags(pki.client, null)]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain("shop/cart");
  });

  it("refuses a registrar whose SPIFFE ID is not the one expected", async () => {
    const other = "spiffe://hub.mesh/ns/aether-system/sa/impostor";
    const result = await aetherctl(["list", ...tlsFlags(pki.client, other)]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
    expect(result.stderr).toMatch(
      /^aetherctl: tls: unexpected_spiffe_id: https:\/\/127\.0\.0\.1:\d+: we refused the registrar's certificate/,
    );
    expect(result.stderr).toContain(REGISTRAR_ID);
  });

  it("without bundles trusts the system's CAs only: the test PKI's registrar is untrusted", async () => {
    const result = await aetherctl(["list", "--registrar", registrar.url]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^aetherctl: tls: untrusted_chain: https:\/\/127\.0\.0\.1:\d+: we refused/,
    );
  });

  it("says the registrar refused us when we present no certificate, or one of an unknown CA", async () => {
    for (const svid of [undefined, pki.unknownCa]) {
      const result = await aetherctl(["status", ...tlsFlags(svid)]);
      expect(result.code).toBe(1);
      expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
      expect(result.stderr).toMatch(
        /^aetherctl: tls: refused_by_registrar: https:\/\/127\.0\.0\.1:\d+: the registrar closed the connection after the handshake: it probably refused our certificate/,
      );
    }
  });

  it("prints the registrar's PermissionDenied, naming our ID, for an ID outside --authorize", async () => {
    const result = await aetherctl(["list", ...tlsFlags(intruder)]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(
      /^aetherctl: permission_denied: .*spiffe:\/\/east\.mesh\/ns\/other\/sa\/intruder/,
    );
    expect(result.stderr.trimEnd().split("\n")).toHaveLength(1);
  });

  it("names a certificate file it cannot read, exit 1, before calling", async () => {
    const missing = join(dir, "missing.pem");
    const result = await aetherctl([
      "list",
      ...tlsFlags(undefined),
      ...["--tls-cert-file", missing, "--tls-key-file", pki.client.key],
    ]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(missing);
    expect(result.stderr).not.toContain("PRIVATE KEY");
  });

  it("takes the registrar and every TLS setting from the environment: status with no flags", async () => {
    const env = {
      AETHER_REGISTRAR: registrar.url,
      AETHER_TLS_CERT_FILE: pki.client.cert,
      AETHER_TLS_KEY_FILE: pki.client.key,
      AETHER_TRUST_DOMAIN_BUNDLE: `hub.mesh=${pki.bundles.hubJwks},east.mesh=${pki.bundles.eastPem}`,
      AETHER_REGISTRAR_SPIFFE_ID: REGISTRAR_ID,
    };
    const result = await aetherctl(["status", "-o", "json"], { env });
    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout).cluster).toBe("hub");
    // A flag wins: the intruder's pair given on the command line is the one presented.
    const flagged = await aetherctl(
      ["list", "--tls-cert-file", intruder.cert, "--tls-key-file", intruder.key],
      { env },
    );
    expect(flagged.code).toBe(1);
    expect(flagged.stderr).toMatch(/^aetherctl: permission_denied: .*sa\/intruder/);
  });

  it("refuses TLS flags without an https:// registrar as a usage error", async () => {
    const result = await aetherctl([
      "list",
      ...["--registrar", "http://127.0.0.1:1", "--tls-cert-file", pki.client.cert],
    ]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain("--tls-cert-file need an https:// registrar");
  });
});
