/**
 * `aetherctl get` and `list` report who signed each projection and whether
 * it verified, checked locally with `--origin-keys`, against a real
 * registrar (in-process, on a loopback socket) whose store holds values
 * signed with keys this test generates: one signed by hub's key, the same
 * signed and then altered by one byte, one of east signed with a key the
 * file does not list, and one unsigned.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromJson, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { projectionKey } from "../../services/registrar/store/store-key.js";
import { signStoredValue } from "../../services/signing/signing-key.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { generateTestSigningKey } from "../support/signing-keys.js";

const PREFIX = "/aether/v1";

const hubKey = generateTestSigningKey().key;
const strangerKey = generateTestSigningKey().key;

/** The stored encoding of `service` from `origin`, its single backend `backend`. */
function encoded(service: string, origin: string, backend: string): Uint8Array {
  return toBinary(ServiceConfigProjectionSchema, {
    ...makeProjection(service, { version: versionAt(1), backend }),
    originCluster: origin,
  });
}

/** `bytes` with the last occurrence of `from` replaced by `to` (same length). */
function replaceLast(bytes: Uint8Array, from: string, to: string): Uint8Array {
  const text = Buffer.from(bytes).toString("latin1");
  const at = text.lastIndexOf(from);
  if (at < 0 || from.length !== to.length) throw new Error(`${from} not found`);
  return Buffer.from(text.slice(0, at) + to + text.slice(at + from.length), "latin1");
}

let dir: string;
let keysPath: string;
let registrar: TestRegistrar;
beforeAll(async () => {
  const backend = createMemoryBackend();
  const hub = createMemoryStore({ origin: "hub", backend });
  const east = createMemoryStore({ origin: "east", backend });
  hub.putRaw(
    projectionKey(PREFIX, "hub", "shop/cart"),
    signStoredValue(encoded("shop/cart", "hub", "shop/cart-v1"), "hub", hubKey),
  );
  const signedPay = signStoredValue(encoded("shop/pay", "hub", "shop/pay-v1"), "hub", hubKey);
  const altered = replaceLast(signedPay, "pay-v1", "pay-v0");
  expect(altered.filter((byte, i) => byte !== signedPay[i])).toHaveLength(1);
  hub.putRaw(projectionKey(PREFIX, "hub", "shop/pay"), altered);
  hub.putRaw(projectionKey(PREFIX, "hub", "shop/plain"), encoded("shop/plain", "hub", "shop/p"));
  east.putRaw(
    projectionKey(PREFIX, "east", "shop/east"),
    signStoredValue(encoded("shop/east", "east", "shop/e"), "east", strangerKey),
  );
  dir = await mkdtemp(join(tmpdir(), "aetherctl-signatures-"));
  keysPath = join(dir, "origin-keys.yaml");
  const pem = hubKey.publicKeyPem.trimEnd().replace(/\n/g, "\n      ");
  await writeFile(keysPath, `origins:\n  hub:\n    - |\n      ${pem}\n`);
  registrar = await startTestRegistrar(["--cluster", "hub"], { store: hub });
}, 30_000);
afterAll(async () => {
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

const ctl = (...args: string[]) => runAetherctlInProcess(["--registrar", registrar.url, ...args]);

/** The `signed:` line of a `get` tree. */
function signedLine(tree: string): string | undefined {
  return tree.split("\n").find((line) => line.startsWith("signed:"));
}

describe("aetherctl reports projection signatures", () => {
  it("get: verified with the right key id, and a bad signature for a flipped byte", async () => {
    const [cart, pay, unchecked, plain] = await Promise.all([
      ctl("get", "shop/cart", "--origin-keys", keysPath),
      ctl("get", "shop/pay", "--origin-keys", keysPath),
      ctl("get", "shop/pay"),
      ctl("get", "shop/plain", "--origin-keys", keysPath),
    ]);
    for (const run of [cart, pay, unchecked, plain]) expect(run.stderr).toBe("");
    expect(signedLine(cart.stdout)).toBe(
      `signed:   key ${hubKey.keyId} of hub (ed25519): verified`,
    );
    expect(signedLine(pay.stdout)).toBe(
      `signed:   key ${hubKey.keyId} of hub (ed25519): bad signature`,
    );
    // The altered byte is served as stored: the tree shows it.
    expect(pay.stdout).toContain("backend: shop/pay-v0:80");
    expect(signedLine(unchecked.stdout)).toBe(
      `signed:   key ${hubKey.keyId} of hub (ed25519): not checked (no --origin-keys)`,
    );
    expect(signedLine(plain.stdout)).toBe("signed:   unsigned");
  });

  it("get -o json keeps the proto JSON and adds signatureCheck; the variable stands in for the flag", async () => {
    const [json, east] = await Promise.all([
      ctl("-o", "json", "get", "shop/cart", "--origin-keys", keysPath),
      runAetherctlInProcess(
        ["--registrar", registrar.url, "-o", "json", "get", "--origin", "east", "shop/east"],
        { env: { AETHER_ORIGIN_KEYS: keysPath } },
      ),
    ]);
    expect(json.code).toBe(0);
    const { signatureCheck, ...proto } = JSON.parse(json.stdout) as JsonObject;
    expect(signatureCheck).toEqual({
      keyId: hubKey.keyId,
      algorithm: "ed25519",
      state: "verified",
    });
    const projection = fromJson(ServiceConfigProjectionSchema, proto);
    expect(projection.service).toBe("shop/cart");
    expect(projection.signature?.keyId).toBe(hubKey.keyId);
    expect(projection.signature?.signature).toHaveLength(64);
    expect(JSON.parse(east.stdout).signatureCheck).toEqual({
      keyId: strangerKey.keyId,
      algorithm: "ed25519",
      state: "unknown_key",
    });
  });

  it("list: the SIGNED column, marked only where verification failed", async () => {
    const [checked, unchecked] = await Promise.all([
      ctl("list", "--all-origins", "--origin-keys", keysPath),
      ctl("list", "--all-origins"),
    ]);
    const signedColumn = (table: string) =>
      table
        .trimEnd()
        .split("\n")
        .map((line) => {
          const cells = line.split(/ {2,}/);
          return `${cells[0]}@${cells[1]}: ${cells.slice(6).join(" ")}`;
        });
    expect(signedColumn(checked.stdout)).toEqual([
      "SERVICE@ORIGIN: SIGNED",
      `shop/east@east: ${strangerKey.keyId} (unknown key)`,
      `shop/cart@hub: ${hubKey.keyId}`,
      `shop/pay@hub: ${hubKey.keyId} (bad signature)`,
      "shop/plain@hub: -",
    ]);
    expect(signedColumn(unchecked.stdout)).toEqual([
      "SERVICE@ORIGIN: SIGNED",
      `shop/east@east: ${strangerKey.keyId}`,
      `shop/cart@hub: ${hubKey.keyId}`,
      `shop/pay@hub: ${hubKey.keyId}`,
      "shop/plain@hub: -",
    ]);
  });
});
