/**
 * The TLS material decision (pure): a sequence of re-reads, given as file
 * texts from a test PKI made with openssl, and what each one takes, keeps
 * and reports.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FileRead } from "../../services/runtime/tls/material-piece.js";
import {
  decideMaterial,
  INITIAL_MATERIAL_STATE,
  type MaterialFiles,
  type MaterialState,
} from "../../services/runtime/tls/tls-material.js";
import { issueSvid, type TestSvid } from "../support/spiffe-ca.js";
import { createSpiffePki, REGISTRAR_ID, type SpiffePki } from "../support/test-spiffe-pki.js";

let dir: string;
let pki: SpiffePki;
let rotated: TestSvid;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-material-"));
  pki = await createSpiffePki(dir);
  rotated = await issueSvid(pki.hubCa, dir, "server-2", { uris: [REGISTRAR_ID] });
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const text = (path: string): FileRead => ({ path, text: readFileSync(path, "utf8") });

/** A re-read: the identity pair (file texts; `cert.crt`/`key.pem` as paths) and the east bundle. */
function files(
  cert: string,
  key: string,
  eastBundle = readFileSync(pki.bundles.eastPem, "utf8"),
): MaterialFiles {
  return {
    identity: { cert: { path: "cert.crt", text: cert }, key: { path: "key.pem", text: key } },
    bundles: new Map([
      ["east.mesh", { path: "east.pem", text: eastBundle }],
      ["hub.mesh", text(pki.bundles.hubJwks)],
    ]),
  };
}

const read = (path: string) => readFileSync(path, "utf8");

describe("TLS material decisions", () => {
  it("takes the first read, then a rotation, and keeps the old pair through a bad one, reporting it once", () => {
    const [serverCert, serverKey] = [read(pki.server.cert), read(pki.server.key)];
    const [newCert, newKey] = [read(rotated.cert), read(rotated.key)];
    const steps: [string, MaterialFiles, boolean, string | undefined, string[]][] = [
      ["first read", files(serverCert, serverKey), true, pki.server.serial, []],
      ["the same files", files(serverCert, serverKey), false, pki.server.serial, []],
      [
        "a new certificate, old key",
        files(newCert, serverKey),
        false,
        pki.server.serial,
        ["identity key_mismatch"],
      ],
      ["the same mismatch again", files(newCert, serverKey), false, pki.server.serial, []],
      [
        "a half-written certificate",
        files(newCert.slice(0, 200), newKey),
        false,
        pki.server.serial,
        ["identity certificate_invalid"],
      ],
      ["an empty key", files(newCert, ""), false, pki.server.serial, ["identity key_invalid"]],
      ["the new pair", files(newCert, newKey), true, rotated.serial, []],
      [
        "a broken east bundle",
        files(newCert, newKey, "{"),
        false,
        rotated.serial,
        ["bundle east.mesh bundle_invalid"],
      ],
      ["the old pair back", files(serverCert, serverKey, "{"), true, pki.server.serial, []],
    ];
    let state: MaterialState = INITIAL_MATERIAL_STATE;
    let generation = 0;
    for (const [step, input, changed, serial, refused] of steps) {
      const next = decideMaterial(state, input);
      expect({ step, changed: next.changed }).toEqual({ step, changed });
      expect(
        next.rejections.map((r) => `${r.piece} ${r.reason}`),
        step,
      ).toEqual(refused);
      if (changed) generation += 1;
      expect(next.state.material?.generation, step).toBe(generation);
      expect(next.state.material?.identity?.serial, step).toBe(serial);
      state = next.state;
    }
    // The broken east bundle was refused; the one taken before it stays.
    expect(state.material?.bundles.get("east.mesh")?.authorities).toHaveLength(1);
  });

  it("names the files in a refusal and never quotes the key", () => {
    const key = read(pki.client.key);
    const mismatch = decideMaterial(INITIAL_MATERIAL_STATE, files(read(pki.server.cert), key));
    expect(mismatch.rejections[0]?.message).toMatch(
      /^key.pem is not the key of cert.crt \(certificate CN=server serial [0-9A-F]+\)/,
    );
    const garbled = `${key.slice(0, 60)}garbage${key.slice(60)}`;
    const invalid = decideMaterial(INITIAL_MATERIAL_STATE, files(read(pki.server.cert), garbled));
    expect(invalid.rejections[0]?.message).toMatch(/^key.pem: no PEM private key \(/);
    const body = key.split("\n")[1] as string;
    for (const { message } of [...mismatch.rejections, ...invalid.rejections]) {
      expect(message).not.toContain(body.slice(0, 16));
    }
  });

  it("reports a file that could not be read as unreadable", () => {
    const input: MaterialFiles = {
      identity: { cert: text(pki.server.cert), key: { path: "gone.key", error: "no such file" } },
      bundles: new Map(),
    };
    expect(decideMaterial(INITIAL_MATERIAL_STATE, input).rejections).toEqual([
      { piece: "identity", reason: "unreadable", message: "gone.key: no such file" },
    ]);
  });

  it("builds TLS context options with the chain, the key and every bundle's CAs, and never serializes the key", () => {
    const { state } = decideMaterial(
      INITIAL_MATERIAL_STATE,
      files(read(pki.client.cert), read(pki.client.key)),
    );
    const material = state.material;
    const options = material?.secureContextOptions();
    expect(String(options?.cert).match(/BEGIN CERTIFICATE/g)).toHaveLength(2);
    expect(String(options?.key)).toMatch(/^-----BEGIN PRIVATE KEY-----/);
    expect(options?.ca).toHaveLength(2);
    expect(material?.identity?.spiffeId?.text).toBe(
      "spiffe://east.mesh/ns/aether-system/sa/aether-agent",
    );
    expect(material?.identity?.notAfter).toBeGreaterThan(Date.now());
    expect(JSON.stringify(material)).not.toContain("PRIVATE KEY");
  });

  it("works without an identity (a client that presents no certificate)", () => {
    const { state, rejections } = decideMaterial(INITIAL_MATERIAL_STATE, {
      bundles: new Map([["hub.mesh", text(pki.bundles.hubPem)]]),
    });
    expect(rejections).toEqual([]);
    expect(state.material?.identity).toBeUndefined();
    expect(state.material?.secureContextOptions()).toEqual({
      ca: [expect.stringMatching(/BEGIN CERTIFICATE/)],
    });
  });
});
