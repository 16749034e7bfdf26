/**
 * The projection index under a signature check, over real signed bytes: a
 * put whose signature is rejected (unsigned, unknown key, bad signature) is
 * refused like a rollback, so the last good projection stays the winner and
 * the refusal is listed with its reason; `readmit` judges the refused puts
 * again once the keys change (a key added), and applies those now accepted.
 */
import { generateKeyPairSync } from "node:crypto";
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy, type ImportRejection } from "../../services/common/import-policy.js";
import type { CachedProjection } from "../../services/registrar/cache/cached-projection.js";
import { createProjectionIndex } from "../../services/registrar/cache/projection-index.js";
import { encodeProjection } from "../../services/registrar/store/decode-entry.js";
import {
  NO_ORIGIN_KEYS,
  type OriginKeys,
  parseOriginKeys,
} from "../../services/signing/origin-keys.js";
import { createOriginKeysCheck } from "../../services/signing/origin-keys-source.js";
import {
  parseSigningKey,
  type SigningKey,
  signStoredValue,
} from "../../services/signing/signing-key.js";
import { cachedEntry } from "../support/cache-entries.js";
import { versionAt } from "../support/projections.js";

function newSigningKey() {
  const { privateKey } = generateKeyPairSync("ed25519");
  return parseSigningKey(privateKey.export({ type: "pkcs8", format: "pem" }), "test key");
}

const good = newSigningKey();
const other = newSigningKey();
const keysOf = (...pems: string[]) =>
  parseOriginKeys(JSON.stringify({ origins: { hub: pems } }), "keys.json");

/** The stored bytes of hub's projection of `service` at version second `at`, signed by `key`. */
function value(service: string, at: number, key: SigningKey | null = good, hosts = ["a.example"]) {
  const projection = create(ServiceConfigProjectionSchema, {
    service,
    version: versionAt(at),
    routes: [{ hostnames: hosts }],
  });
  const bytes = encodeProjection(projection, "hub");
  return key === null ? bytes : signStoredValue(bytes, "hub", key);
}

/** An index requiring signatures over `keys()`, recording newly rejected entries. */
function indexWith(keys: () => OriginKeys) {
  const newlyRejected: string[] = [];
  const policy = createImportPolicy({ signatures: createOriginKeysCheck(keys, true) });
  const index = createProjectionIndex({
    policy,
    onRejection: (r: ImportRejection<CachedProjection>) =>
      newlyRejected.push(`${r.candidate.service}:${r.reason}`),
  });
  return { index, newlyRejected };
}

const put = (service: string, at: number, modRevision: number, bytes: Uint8Array) => ({
  type: "put" as const,
  entry: cachedEntry("hub", service, versionAt(at), modRevision, bytes),
  revision: modRevision,
});

describe("the projection index with signatures required", () => {
  const flipped = value("ns/a", 2);
  const at = Buffer.from(flipped).indexOf("a.example");
  flipped[at] = (flipped[at] as number) ^ 0x01;
  it.each([
    { name: "unsigned", bytes: value("ns/a", 2, null), reason: "unsigned" },
    { name: "signed by a key not listed", bytes: value("ns/a", 2, other), reason: "unknown_key" },
    { name: "a byte flipped after signing", bytes: flipped, reason: "bad_signature" },
  ])("refuses a put $name and keeps the last good projection", ({ bytes, reason }) => {
    const keys = keysOf(good.publicKeyPem);
    const { index, newlyRejected } = indexWith(() => keys);
    const first = put("ns/a", 1, 10, value("ns/a", 1));
    expect(index.apply(first)?.effective?.type).toBe("upsert");
    expect(index.apply(put("ns/a", 2, 11, bytes))).toBeUndefined();
    expect(index.get("hub", "ns/a")).toBe(first.entry);
    expect(index.snapshot(undefined, "effective")).toEqual([first.entry]);
    expect(index.rejections().map((r) => r.reason)).toEqual([reason]);
    expect(index.stats().rejected.get(reason as never)).toBe(1);
    expect(newlyRejected).toEqual([`ns/a:${reason}`]);
    // A good put of the key ends the refusal.
    expect(index.apply(put("ns/a", 3, 12, value("ns/a", 3)))?.effective?.type).toBe("upsert");
    expect(index.rejections()).toEqual([]);
  });

  it("judges the refused puts again when the keys change", () => {
    let keys: OriginKeys = NO_ORIGIN_KEYS;
    const { index, newlyRejected } = indexWith(() => keys);
    expect(index.apply(put("ns/a", 1, 10, value("ns/a", 1)))).toBeUndefined();
    expect(index.apply(put("ns/b", 1, 11, value("ns/b", 1, other)))).toBeUndefined();
    expect(index.readmit(12)).toEqual([]);
    expect(newlyRejected).toEqual(["ns/a:unknown_key", "ns/b:unknown_key"]);
    keys = keysOf(good.publicKeyPem);
    const records = index.readmit(12);
    expect(records.map((r) => `${r.raw.type}:${r.raw.service}@${r.revision}`)).toEqual([
      "upsert:ns/a@12",
    ]);
    expect(index.snapshot(undefined, "effective").map((e) => e.service)).toEqual(["ns/a"]);
    expect(index.rejections().map((r) => `${r.candidate.service}:${r.reason}`)).toEqual([
      "ns/b:unknown_key",
    ]);
    // Judged again and still refused: not reported again.
    expect(newlyRejected).toHaveLength(2);
  });

  it("refuses an older validly signed value as a rollback", () => {
    const keys = keysOf(good.publicKeyPem);
    const { index } = indexWith(() => keys);
    const old = value("ns/a", 1);
    index.apply(put("ns/a", 1, 10, old));
    index.apply(put("ns/a", 2, 11, value("ns/a", 2, good, ["b.example"])));
    expect(index.apply(put("ns/a", 1, 12, old))).toBeUndefined();
    expect(index.rejections().map((r) => r.reason)).toEqual(["rollback"]);
    expect(index.get("hub", "ns/a")?.modRevision).toBe(11);
  });
});
