/**
 * The agent's end-to-end signature checks, table-driven over real Ed25519
 * keys: every forgery a registrar could serve (unsigned, a key the agent
 * does not know, a flipped byte, another origin's signature) is refused
 * with its reason by the candidate set whichever way it arrives (snapshot,
 * replay, one change) and the previous candidate stays; a decoded projection
 * carrying fields this agent does not know still verifies; the last-known
 * cache keeps what the signature covers, so a restored projection verifies
 * again; and what an accepted re-read of `--origin-keys` decides. No timers, no I/O.
 */
import { fromBinary, fromJson, toBinary, toJson } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { restoreCachedState } from "../../clients/agent/cached-state.js";
import {
  createCandidateSet,
  type ReceivedChange,
} from "../../clients/agent/follower/candidate-set.js";
import { candidateKey, checkReceived } from "../../clients/agent/follower/received-projection.js";
import { decodeCacheFile, encodeCacheFile } from "../../clients/agent/last-known-cache.js";
import { decideReload, type KeysReload, keyIdsOf } from "../../clients/agent/origin-keys-reload.js";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy, type ImportCandidate } from "../../services/common/import-policy.js";
import { NO_ORIGIN_KEYS } from "../../services/signing/origin-keys.js";
import { createOriginKeysCheck } from "../../services/signing/origin-keys-source.js";
import { signStoredValue } from "../../services/signing/signing-key.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { originKeysOf as keysOf, newSigningKey } from "../support/signing-keys.js";

const hubKey = newSigningKey();
const eastKey = newSigningKey();
const strangerKey = newSigningKey();

const policy = createImportPolicy({
  signatures: createOriginKeysCheck(() => keysOf({ hub: [hubKey], east: [eastKey] }), true),
});

/** The stored bytes of `origin`'s projection of shop/a at version `n`, unsigned. */
const storedBytes = (n: number, origin = "hub") =>
  toBinary(
    ServiceConfigProjectionSchema,
    makeProjection("shop/a", { origin, version: versionAt(n) }),
  );
const decode = (bytes: Uint8Array) => fromBinary(ServiceConfigProjectionSchema, bytes);
const flip = (bytes: Uint8Array, at: number) => {
  const out = bytes.slice();
  out[at] = (out[at] ?? 0) ^ 1;
  return out;
};
/** A put of hub's shop/a carrying `projection`. */
const put = (projection: ServiceConfigProjection): ReceivedChange => ({
  kind: "put",
  origin: "hub",
  service: "shop/a",
  projection,
});
const good = (n: number) => decode(signStoredValue(storedBytes(n), "hub", hubKey));

describe("agent signatures: a forgery is refused and the previous candidate stays", () => {
  const forgeries: [string, ServiceConfigProjection, string][] = [
    ["unsigned", decode(storedBytes(2)), "unsigned"],
    [
      "signed with a key hub's keys do not list",
      decode(signStoredValue(storedBytes(2), "hub", strangerKey)),
      "unknown_key",
    ],
    [
      "signed by east's key (east's registrar speaking for hub)",
      decode(signStoredValue(storedBytes(2), "hub", eastKey)),
      "unknown_key",
    ],
    [
      "east's own signed projection, written under hub's key (stamped hub)",
      { ...decode(signStoredValue(storedBytes(2, "east"), "east", eastKey)), originCluster: "hub" },
      "unknown_key",
    ],
    [
      "hub's key, but the signature binds another origin",
      decode(signStoredValue(storedBytes(2), "east", hubKey)),
      "bad_signature",
    ],
    [
      "one byte of the routes flipped",
      decode(flip(signStoredValue(storedBytes(2), "hub", hubKey), storedBytes(2).length - 3)),
      "bad_signature",
    ],
    [
      "one byte of the signature flipped",
      (() => {
        const bytes = signStoredValue(storedBytes(2), "hub", hubKey);
        return decode(flip(bytes, bytes.length - 1));
      })(),
      "bad_signature",
    ],
    ["an older version, validly signed", good(0), "rollback"],
  ];
  const held: ImportCandidate = { origin: "hub", service: "shop/a", projection: good(1) };
  const previous = new Map([[candidateKey("hub", "shop/a"), held]]);
  const ways = ["snapshot", "replay", "change"] as const;
  for (const [name, projection, reason] of forgeries) {
    for (const way of ways) {
      it(`${name}: ${reason} (${way})`, () => {
        const set = createCandidateSet({
          policy,
          services: ["shop/a"],
          marks: [{ origin: "hub", service: "shop/a", version: versionAt(1) }],
        });
        const result =
          way === "change"
            ? set.change(previous, put(projection))
            : set[way](previous, [put(projection)]);
        expect(result.rejections.map((r) => r.reason)).toEqual([reason]);
        // A change that refuses leaves the map as it was (no new map at all).
        const after = result.candidates ?? previous;
        expect(after.get(candidateKey("hub", "shop/a"))).toBe(held);
      });
    }
  }

  it("a good signed newer version replaces it", () => {
    const set = createCandidateSet({ policy, services: ["shop/a"] });
    const result = set.change(previous, put(good(2)));
    expect(result.rejections).toEqual([]);
    expect(result.candidates?.get(candidateKey("hub", "shop/a"))?.projection.version).toBe(
      versionAt(2),
    );
  });
});

/** `bytes` with a length-delimited field `field` this agent's schema does not know appended. */
const withUnknownField = (bytes: Uint8Array, field: number) =>
  new Uint8Array([...bytes, (field << 3) | 2, 3, 0x6e, 0x65, 0x77]);

describe("agent signatures: what the agent holds still verifies", () => {
  it("a projection from a newer origin, with a field this agent does not know, verifies", () => {
    // A newer writer encodes its new field in field-number order, before the signature.
    const content = withUnknownField(storedBytes(1), 9);
    const projection = decode(signStoredValue(content, "hub", hubKey));
    expect(projection.$unknown).toHaveLength(1);
    const received = { origin: "hub", service: "shop/a", projection };
    expect(checkReceived(received, new Set(["shop/a"]), policy).rejection).toBeUndefined();
    // The registrar may serve it with or without the origin stamped; the signature excludes it.
    const unstamped = { ...received, projection: { ...projection, originCluster: "" } };
    expect(checkReceived(unstamped, new Set(["shop/a"]), policy).rejection).toBeUndefined();
  });

  it("the last-known cache keeps the signed bytes: a restored projection verifies again", () => {
    const signed = decode(signStoredValue(withUnknownField(storedBytes(1), 9), "hub", hubKey));
    const unsigned = makeProjection("shop/b", { origin: "hub", version: versionAt(1) });
    const file = encodeCacheFile({
      revision: 7n,
      services: ["shop/a", "shop/b"],
      imported: [
        { origin: "hub", service: "shop/a", projection: signed },
        { origin: "hub", service: "shop/b", projection: unsigned },
      ],
      local: [],
      marks: [],
    });
    const payload = JSON.parse(file.toString("utf8").split("\n")[1] as string);
    // Only the signed entry carries its encoding; every entry keeps its JSON for older agents.
    expect(payload.imported.map((e: { encoded?: string }) => e.encoded !== undefined)).toEqual([
      true,
      false,
    ]);
    expect(payload.imported[0].projection.signature.keyId).toBe(hubKey.keyId);
    const decoded = decodeCacheFile(file);
    const lenient = createImportPolicy({
      signatures: createOriginKeysCheck(() => keysOf({ hub: [hubKey] }), false),
    });
    const { restored, dropped } = restoreCachedState(decoded, lenient);
    expect(dropped).toEqual([]);
    expect([...restored.state.candidates.keys()].sort()).toEqual([
      candidateKey("hub", "shop/a"),
      candidateKey("hub", "shop/b"),
    ]);
    // Through its proto JSON alone (all an older cache kept), the unknown field is lost,
    // and with it the bytes the signature covers.
    const viaJson = fromJson(
      ServiceConfigProjectionSchema,
      toJson(ServiceConfigProjectionSchema, signed),
    );
    const jsonOnly = {
      ...decoded,
      imported: [{ origin: "hub", service: "shop/a", projection: viaJson }],
    };
    expect(restoreCachedState(jsonOnly, lenient).dropped.map((r) => r.reason)).toEqual([
      "bad_signature",
    ]);
  });
});

describe("agent signatures: what an accepted re-read of --origin-keys does", () => {
  type Keys = Parameters<typeof keysOf>[0];
  const hub = { hub: [hubKey] };
  const both = { hub: [hubKey, strangerKey] };
  const cases: [string, Keys, Keys, KeysReload][] = [
    ["the same keys", hub, hub, { kind: "unchanged" }],
    ["the same keys, repeated", hub, { hub: [hubKey, hubKey] }, { kind: "unchanged" }],
    [
      "a key added for a rotation: resync",
      hub,
      both,
      { kind: "changed", added: [`hub/${strangerKey.keyId}`], removed: [], resync: true },
    ],
    [
      "another origin added: resync",
      hub,
      { hub: [hubKey], east: [eastKey] },
      { kind: "changed", added: [`east/${eastKey.keyId}`], removed: [], resync: true },
    ],
    [
      "the old key removed after a rotation: no resync",
      both,
      { hub: [strangerKey] },
      { kind: "changed", added: [], removed: [`hub/${hubKey.keyId}`], resync: false },
    ],
    [
      "an origin removed: no resync",
      { hub: [hubKey], east: [eastKey] },
      hub,
      { kind: "changed", added: [], removed: [`east/${eastKey.keyId}`], resync: false },
    ],
    [
      "one key replaced by another at once: resync",
      hub,
      { hub: [strangerKey] },
      {
        kind: "changed",
        added: [`hub/${strangerKey.keyId}`],
        removed: [`hub/${hubKey.keyId}`],
        resync: true,
      },
    ],
  ];
  for (const [name, previous, next, expected] of cases) {
    it(name, () => {
      expect(decideReload(keysOf(previous), keysOf(next))).toEqual(expected);
    });
  }

  it("lists key ids by origin, and none for no keys", () => {
    expect(keyIdsOf(keysOf({ hub: [hubKey], east: [eastKey] }))).toEqual(
      [`east/${eastKey.keyId}`, `hub/${hubKey.keyId}`].sort(),
    );
    expect(keyIdsOf(NO_ORIGIN_KEYS)).toEqual([]);
  });
});
