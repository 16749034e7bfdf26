/**
 * Mutual TLS with SPIFFE identities over real `node:tls` sockets, with
 * certificates this test makes with openssl: the server verifies each
 * client's X.509-SVID (and refuses each bad one with its reason), the client
 * checks the server's SPIFFE ID, and the server's certificate rotates under
 * an open connection through a Kubernetes-style symlink swap.
 */

import { readFileSync } from "node:fs";
import { copyFile, mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { MaterialRejection } from "../../services/runtime/tls/material-piece.js";
import { SvidRefusedError, tlsErrorReason } from "../../services/runtime/tls/peer-svid.js";
import type { TlsMaterial } from "../../services/runtime/tls/tls-material.js";
import {
  openTlsMaterialSource,
  type TlsMaterialSource,
} from "../../services/runtime/tls/tls-material-source.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import {
  connectSpiffeClient,
  nextLine,
  type SpiffeTlsServer,
  startSpiffeTlsServer,
} from "../support/spiffe-tls-peers.js";
import {
  AGENT_ID,
  createSpiffePki,
  REGISTRAR_ID,
  type SpiffePki,
} from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

let dir: string;
let pki: SpiffePki;
let rotated: TestSvid;
let source: TlsMaterialSource;
let server: SpiffeTlsServer;
const updates: TlsMaterial[] = [];
const refused: MaterialRejection[] = [];
const closers: (() => unknown)[] = [];

/** Publishes `svid` as version `version` of `serving/`, the way Kubernetes' atomic writer does: a new directory, then `..data` swapped to it by a rename. */
async function publish(version: number, svid: { cert: string; key: string }): Promise<void> {
  const serving = join(dir, "serving");
  const target = join(serving, `..v${version}`);
  await mkdir(target, { recursive: true });
  await copyFile(svid.cert, join(target, "tls.crt"));
  await copyFile(svid.key, join(target, "tls.key"));
  await symlink(`..v${version}`, join(serving, "..data_tmp"));
  await rename(join(serving, "..data_tmp"), join(serving, "..data"));
}

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-spiffe-tls-"));
  pki = await createSpiffePki(dir);
  rotated = await issueSvid(pki.hubCa, dir, "server-2", {
    uris: [REGISTRAR_ID],
    otherSans: ["DNS:localhost"],
  });
  await publish(1, pki.server);
  await symlink("..data/tls.crt", join(dir, "serving", "tls.crt"));
  await symlink("..data/tls.key", join(dir, "serving", "tls.key"));
  source = await openTlsMaterialSource({
    certFile: join(dir, "serving", "tls.crt"),
    keyFile: join(dir, "serving", "tls.key"),
    bundleFiles: new Map([
      ["hub.mesh", pki.bundles.hubJwks],
      ["east.mesh", pki.bundles.eastPem],
    ]),
    pollIntervalMs: 600_000, // the watch, not the re-stat, must notice the swap
    settle: { settleMs: 20, retries: 4 },
    onUpdate: (material) => {
      server.server.setSecureContext(material.secureContextOptions());
      updates.push(material);
    },
    onRejected: (rejection) => refused.push(rejection),
  });
  closers.push(() => source.close());
  server = await startSpiffeTlsServer(
    source.material.secureContextOptions(),
    () => source.material.bundles,
  );
  closers.push(() => server.close());
});

afterAll(async () => {
  for (const close of closers.reverse()) await close();
  await rm(dir, { recursive: true, force: true });
});

const bundles = () => source.material.bundles;

describe("mutual TLS with X.509-SVIDs", () => {
  it("completes a mutual handshake: the server gets the agent's ID, the client checks the registrar's", async () => {
    const outcome = await connectSpiffeClient(server.port, bundles(), REGISTRAR_ID, pki.client);
    closers.push(() => outcome.socket.destroy());
    expect(outcome.error).toBeUndefined();
    expect(outcome.greeting).toBe(`hello ${AGENT_ID}`);
    expect(outcome.serverSerial).toBe(pki.server.serial);
    expect(server.verdicts.at(-1)).toMatchObject({ ok: true, id: { text: AGENT_ID } });
  });

  it.each([
    ["no client certificate", undefined, "no_certificate"],
    ["a certificate from a CA no bundle holds", "unknownCa", "untrusted_chain"],
    ["an expired certificate", "expired", "expired"],
    ["a certificate valid from tomorrow", "notYetValid", "not_yet_valid"],
    ["east's CA signing a hub.mesh ID", "forgery", "untrusted_chain"],
    ["a certificate with two URI SANs", "twoUris", "multiple_uri_sans"],
    ["a certificate without a SPIFFE ID", "noSpiffeId", "no_spiffe_id"],
    ["a CA certificate", "leafCa", "leaf_is_ca"],
  ] as const)("the server refuses %s: %s", async (_, name, reason) => {
    const before = server.verdicts.length;
    const outcome = await connectSpiffeClient(
      server.port,
      bundles(),
      REGISTRAR_ID,
      name === undefined ? undefined : pki[name],
    );
    outcome.socket.destroy();
    expect(outcome.greeting).toBeUndefined();
    await waitFor(() => server.verdicts.length > before, 5_000, "the server's verdict");
    expect(server.verdicts[before]).toMatchObject({ ok: false, reason });
  });

  it.each([
    [
      "east's CA vouching for a hub.mesh ID (OpenSSL's one pool accepts it)",
      "forgery",
      "untrusted_chain",
      SvidRefusedError,
    ],
    ["another workload's valid SVID", "client", "unexpected_spiffe_id", SvidRefusedError],
    ["an expired certificate (OpenSSL refuses it first)", "expired", "expired", Error],
  ] as const)("the client refuses a server presenting %s", async (_, name, reason, type) => {
    const impostor = await startSpiffeTlsServer(
      { cert: readFileSync(pki[name].cert), key: readFileSync(pki[name].key) },
      bundles,
    );
    closers.push(() => impostor.close());
    const outcome = await connectSpiffeClient(impostor.port, bundles(), REGISTRAR_ID, pki.client);
    outcome.socket.destroy();
    expect(outcome.greeting).toBeUndefined();
    expect(outcome.error).toBeInstanceOf(type);
    expect(tlsErrorReason(outcome.error)).toBe(reason);
  });
});

describe("rotation of the server's certificate", () => {
  it("keeps an open connection, and the next handshake presents the new serial", async () => {
    const open = await connectSpiffeClient(server.port, bundles(), REGISTRAR_ID, pki.client);
    closers.push(() => open.socket.destroy());
    expect(open.serverSerial).toBe(pki.server.serial);
    await publish(2, rotated);
    await waitFor(() => updates.length === 1, 5_000, "the rotated certificate to be taken");
    expect(source.material.identity?.serial).toBe(rotated.serial);
    expect(source.material.generation).toBe(2);
    const echoed = nextLine(open.socket);
    open.socket.write("still here\n");
    expect(await echoed).toBe("still here");
    const next = await connectSpiffeClient(server.port, bundles(), REGISTRAR_ID, pki.client);
    next.socket.destroy();
    expect(next.greeting).toBe(`hello ${AGENT_ID}`);
    expect(next.serverSerial).toBe(rotated.serial);
  });

  it("keeps the current pair when a mismatched key is written in place, and says why", async () => {
    // Written through the symlinks into the current version's directory: a key from the old pair.
    await writeFile(join(dir, "serving", "tls.key"), readFileSync(pki.server.key));
    await waitFor(() => refused.length === 1, 5_000, "the mismatched pair to be refused");
    expect(refused[0]).toMatchObject({ piece: "identity", reason: "key_mismatch" });
    expect(refused[0]?.message).toMatch(/serving\/tls.key is not the key of .*serving\/tls.crt/);
    expect(source.rejections.get("key_mismatch")).toBe(1);
    expect(updates).toHaveLength(1);
    const next = await connectSpiffeClient(server.port, bundles(), REGISTRAR_ID, pki.client);
    next.socket.destroy();
    expect(next.serverSerial).toBe(rotated.serial);
  });

  it("notices a rotation by the re-stat alone when it does not watch", async () => {
    const plain = join(dir, "plain");
    await mkdir(plain);
    await copyFile(pki.server.cert, join(plain, "tls.crt"));
    await copyFile(pki.server.key, join(plain, "tls.key"));
    const seen: string[] = [];
    const polled = await openTlsMaterialSource({
      certFile: join(plain, "tls.crt"),
      keyFile: join(plain, "tls.key"),
      bundleFiles: new Map(),
      watch: false,
      pollIntervalMs: 50,
      onUpdate: (material) => seen.push(material.identity?.serial ?? ""),
    });
    closers.push(() => polled.close());
    // Replaced by renames, key first: until the certificate follows, the pair mismatches.
    await copyFile(rotated.key, join(plain, "tls.key.tmp"));
    await copyFile(rotated.cert, join(plain, "tls.crt.tmp"));
    await rename(join(plain, "tls.key.tmp"), join(plain, "tls.key"));
    await rename(join(plain, "tls.crt.tmp"), join(plain, "tls.crt"));
    await waitFor(() => seen.length === 1, 5_000, "the re-stat to take the new pair");
    expect(seen).toEqual([rotated.serial]);
    expect(polled.material.identity?.serial).toBe(rotated.serial);
  });
});
