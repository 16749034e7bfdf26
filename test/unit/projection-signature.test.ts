import { generateKeyPairSync } from "node:crypto";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import {
  ServiceConfigProjectionSchema,
  SignatureAlgorithm,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { createImportPolicy } from "../../services/common/import-policy.js";
import {
  signedBytes,
  splitDecoded,
  splitStoredValue,
} from "../../services/common/projection-signature.js";
import {
  createSignatureCheck,
  type SignatureVerdict,
} from "../../services/common/signature-check.js";
import { parseOriginKeys, verifyWithKey } from "../../services/signing/origin-keys.js";
import { parseSigningKey, signStoredValue } from "../../services/signing/signing-key.js";

const pair = (type: "ed25519" | "ec") => {
  const { privateKey, publicKey } =
    type === "ed25519"
      ? generateKeyPairSync("ed25519")
      : generateKeyPairSync("ec", { namedCurve: "P-256" });
  return {
    key: parseSigningKey(privateKey.export({ type: "pkcs8", format: "pem" }), "test-key"),
    publicPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
  };
};
const ed = pair("ed25519");
const ec = pair("ec");
const other = pair("ed25519");

const projection = create(ServiceConfigProjectionSchema, {
  service: "shop/cart",
  originCluster: "hub",
  version: "2026-12-01T10:00:00.000000001Z",
  routes: [{ namespace: "shop", name: "cart", hostnames: ["cart.shop"] }],
});
const stored = toBinary(ServiceConfigProjectionSchema, projection);

const keysFile = (entries: Record<string, string[]>) =>
  parseOriginKeys(JSON.stringify({ origins: entries }), "keys.json");

const check = (keys: Record<string, string[]>, require: boolean) =>
  createSignatureCheck({
    keyring: () => keysFile(keys),
    verify: verifyWithKey,
    require,
  });

const flip = (bytes: Uint8Array, at: number) => {
  const out = bytes.slice();
  out[at] = (out[at] ?? 0) ^ 1;
  return out;
};

describe("projection signatures", () => {
  const signedEd = signStoredValue(stored, "hub", ed.key);
  const signedEc = signStoredValue(stored, "hub", ec.key);
  const cases: {
    name: string;
    value: Uint8Array;
    origin?: string;
    keys: Record<string, string[]>;
    require: boolean;
    want: SignatureVerdict["kind"] | "unsigned!" | "unknown_key" | "bad_signature";
  }[] = [
    {
      name: "ed25519 verifies",
      value: signedEd,
      keys: { hub: [ed.publicPem] },
      require: true,
      want: "verified",
    },
    {
      name: "ecdsa p-256 verifies",
      value: signedEc,
      keys: { hub: [ec.publicPem] },
      require: true,
      want: "verified",
    },
    {
      name: "either of two keys while rotating",
      value: signedEc,
      keys: { hub: [ed.publicPem, ec.publicPem] },
      require: true,
      want: "verified",
    },
    {
      name: "unsigned passes when not required",
      value: stored,
      keys: { hub: [ed.publicPem] },
      require: false,
      want: "unsigned",
    },
    {
      name: "unsigned is refused when required",
      value: stored,
      keys: { hub: [ed.publicPem] },
      require: true,
      want: "unsigned!",
    },
    {
      name: "a key the origin does not list",
      value: signedEd,
      keys: { hub: [other.publicPem] },
      require: false,
      want: "unknown_key",
    },
    {
      name: "an origin without keys, required",
      value: signedEd,
      keys: {},
      require: true,
      want: "unknown_key",
    },
    {
      name: "an origin without keys, not required",
      value: signedEd,
      keys: {},
      require: false,
      want: "unchecked",
    },
    {
      name: "another origin's signature",
      value: signedEd,
      origin: "east",
      keys: { east: [ed.publicPem] },
      require: true,
      want: "bad_signature",
    },
    {
      name: "a byte of the routes flipped",
      value: flip(signedEd, stored.length - 3),
      keys: { hub: [ed.publicPem] },
      require: true,
      want: "bad_signature",
    },
    {
      name: "a byte of the signature flipped",
      value: flip(signedEd, signedEd.length - 1),
      keys: { hub: [ed.publicPem] },
      require: true,
      want: "bad_signature",
    },
    {
      name: "two signature records",
      value: new Uint8Array([...signedEd, ...signedEd.subarray(stored.length)]),
      keys: { hub: [ed.publicPem] },
      require: true,
      want: "bad_signature",
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const verdict = check(c.keys, c.require).judge(
        c.origin ?? "hub",
        "shop/cart",
        splitStoredValue(c.value),
      );
      const kind =
        verdict.kind === "rejected"
          ? verdict.reason === "unsigned"
            ? "unsigned!"
            : verdict.reason
          : verdict.kind;
      expect(kind).toBe(c.want);
    });
  }

  it("does not cover origin_cluster, so a reader's re-stamp keeps it valid", () => {
    const restamped = toBinary(ServiceConfigProjectionSchema, {
      ...fromBinary(ServiceConfigProjectionSchema, signedEd),
      originCluster: "claimed-elsewhere",
    });
    const verdict = check({ hub: [ed.publicPem] }, true).judge(
      "hub",
      "shop/cart",
      splitStoredValue(restamped),
    );
    expect(verdict).toEqual({ kind: "verified", keyId: ed.key.keyId });
  });

  it("verifies a decoded message by re-encoding it (what an agent holds)", () => {
    const decoded = fromBinary(ServiceConfigProjectionSchema, signedEc);
    expect(decoded.signature?.algorithm).toBe(SignatureAlgorithm.ECDSA_P256_SHA256);
    expect(splitDecoded(decoded).content).toEqual(splitStoredValue(signedEc).content);
    const policy = createImportPolicy({
      signatures: check({ hub: [ec.publicPem] }, true),
      now: () => Date.parse("2026-12-01T10:00:00Z"),
    });
    expect(
      policy.check({ origin: "hub", service: "shop/cart", projection: decoded }),
    ).toBeUndefined();
    const forged = create(ServiceConfigProjectionSchema, { ...decoded, routes: [] });
    expect(policy.check({ origin: "hub", service: "shop/cart", projection: forged })?.reason).toBe(
      "bad_signature",
    );
  });

  it("signs the documented bytes: context, origin, content without origin and signature", () => {
    const parts = splitStoredValue(signedEd);
    const unstamped = toBinary(ServiceConfigProjectionSchema, { ...projection, originCluster: "" });
    expect(parts.content).toEqual(unstamped);
    const text = new TextDecoder().decode(signedBytes("hub", new Uint8Array()));
    expect(text).toBe("aether.registry.v1.ServiceConfigProjection\u0000hub\u0000");
    expect(parts.signature?.keyId).toMatch(/^[0-9a-f]{16}$/);
    expect(parts.signature?.signature.length).toBe(64);
  });

  it("re-signing replaces the signature record instead of adding one", () => {
    const twice = signStoredValue(signedEd, "hub", ec.key);
    expect(splitStoredValue(twice).signature?.keyId).toBe(ec.key.keyId);
    expect(twice.length).toBe(signedEc.length);
  });
});

describe("origin keys file", () => {
  it("reads YAML, dedupes a key listed twice and names key ids", () => {
    const indented = ed.publicPem.trim().replace(/\n/g, "\n      ");
    const keys = parseOriginKeys(
      `origins:\n  hub:\n    - |\n      ${indented}\n    - |\n      ${indented}\n`,
      "k.yaml",
    );
    expect(keys.origins).toEqual(["hub"]);
    expect(keys.size).toBe(1);
    expect([...(keys.keysOf("hub")?.keys() ?? [])]).toEqual([ed.key.keyId]);
  });

  const bad: [string, string, RegExp][] = [
    ["not YAML", "origins: [", /k\.yaml: not YAML or JSON/],
    ["no origins map", "{}", /expected a map "origins"/],
    ["an empty list", '{"origins":{"hub":[]}}', /origins\.hub must be a non-empty list/],
    [
      "a private key",
      JSON.stringify({
        origins: {
          hub: [generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" })],
        },
      }),
      /origins\.hub\[0\] is not one PEM public key/,
    ],
    [
      "an RSA key",
      JSON.stringify({
        origins: {
          hub: [
            generateKeyPairSync("rsa", { modulusLength: 1024 }).publicKey.export({
              type: "spki",
              format: "pem",
            }),
          ],
        },
      }),
      /only Ed25519 and ECDSA P-256/,
    ],
  ];
  for (const [name, text, message] of bad) {
    it(`refuses ${name}, naming the entry and no key text`, () => {
      expect(() => parseOriginKeys(text, "k.yaml")).toThrow(message);
      try {
        parseOriginKeys(text, "k.yaml");
      } catch (error) {
        expect((error as Error).message).not.toMatch(/MC[A-Za-z0-9+/]{20}/);
      }
    });
  }

  it("refuses a signing key file that is not an Ed25519 or P-256 private key", () => {
    expect(() => parseSigningKey("nope", "/etc/key.pem")).toThrow(
      /\/etc\/key\.pem: not a PEM private key/,
    );
    const p384 = generateKeyPairSync("ec", { namedCurve: "P-384" }).privateKey.export({
      type: "pkcs8",
      format: "pem",
    });
    expect(() => parseSigningKey(p384, "/etc/key.pem")).toThrow(/curve secp384r1; only P-256/);
  });
});
