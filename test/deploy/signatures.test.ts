/**
 * deploy/components/signatures (every importer verifies and requires
 * signatures with ConfigMap aether-origin-keys) and components/signing-key
 * (the hub signs with Secret aether-signing-key), rendered with `kubectl
 * kustomize` in examples/hub-signatures and spoke-east-signatures: the flags
 * the real parsers accept, each file in a read-only whole-volume mount (no
 * subPath, so a rotation reaches it) of the right Secret or ConfigMap, the
 * key readable by the pod's group only, nothing else changed; and the key
 * files deploy/README.md's commands make (openssl), the example
 * origin-keys.yaml, and keys made here with node:crypto in the example's
 * format, read by the importers' own parser.
 *
 * Skipped, loudly (by kustomize.test.ts), only when kubectl is not installed.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SignatureAlgorithm } from "../../gen/aether/registry/v1/projection_pb.js";
import type { RegistrarConfig } from "../../services/registrar/registrar-flags.js";
import { parseOriginKeys, verifyWithKey } from "../../services/signing/origin-keys.js";
import { parseSigningKey } from "../../services/signing/signing-key.js";
import { mountHolding } from "./mtls-renderings.js";
import { parsedAgent, parsedRegistrar } from "./parsed-workloads.js";
import {
  type Container,
  containerEnv,
  flagValue,
  flagValues,
  hasKubectl,
  type KubeObject,
  render,
} from "./rendered-manifests.js";
import {
  ECDSA_KEY_COMMAND,
  EXAMPLE_ORIGIN_KEYS,
  exampleWithKey,
  FIRST_KEY_COMMANDS,
  KEY_ID_COMMAND,
  ROTATION_COMMANDS,
  ROTATION_DONE_COMMAND,
  repoText,
  runCommands,
} from "./signature-files.js";

const HUB = "deploy/examples/hub-signatures";
const EAST = "deploy/examples/spoke-east-signatures";
/** The installs they build on, without signatures: what the components must leave as it was. */
const PLAIN: Readonly<Record<string, string>> = {
  [HUB]: "deploy/overlays/hub",
  [EAST]: "deploy/examples/spoke-east",
};
/** Every importer: [example, kind] (the Deployment aether-registrar, the DaemonSet aether-agent). */
const IMPORTERS: readonly (readonly [string, "Deployment" | "DaemonSet"])[] = [
  [HUB, "Deployment"],
  [EAST, "Deployment"],
  [EAST, "DaemonSet"],
];
const ORIGIN_KEYS_CONFIGMAP = "aether-origin-keys";
const SIGNING_KEY_SECRET = "aether-signing-key";
/** The args the components add, matched without their values. */
const ADDED = /^--(origin-keys|require-signatures|signing-key-file)(=|$)/;
/** What the operator's ConfigMap aether-etcd gives (it is not in the rendering). */
const OPERATOR_ENV = new Map([["AETHER_ETCD_ENDPOINTS", "http://etcd.example.com:2379"]]);

describe.skipIf(!hasKubectl)("deploy/ signed projections (components/signatures)", () => {
  const rendered = new Map<string, KubeObject[]>();
  const scratch = mkdtempSync(join(tmpdir(), "aether-deploy-signatures-"));
  /** The files the registrar's parser reads at once, made by deploy/README.md's commands. */
  const local = {
    "page-token-key-file": join(scratch, "page-token-key"),
    "signing-key-file": join(scratch, "signing.key"),
    "origin-keys": join(scratch, "origin-keys.yaml"),
  };

  beforeAll(async () => {
    writeFileSync(local["page-token-key-file"], "a-test-page-token-key-of-enough-bytes\n");
    runCommands(scratch, FIRST_KEY_COMMANDS);
    const dirs = [HUB, EAST, ...Object.values(PLAIN)];
    await Promise.all(dirs.map(async (dir) => rendered.set(dir, await render(dir))));
  }, 60_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /**
   * The registrar or the agent of `dir` as its program would start (the
   * registrar's files, which its parser reads at once, replaced by `files`,
   * by default those made by deploy/README.md's commands).
   */
  function containerOf(
    dir: string,
    kind: "Deployment" | "DaemonSet",
    files: Readonly<Record<string, string>> = local,
  ) {
    const objects = rendered.get(dir) ?? [];
    return kind === "Deployment"
      ? parsedRegistrar(objects, files, OPERATOR_ENV)
      : parsedAgent(objects);
  }

  describe("every importer", () => {
    it.each(IMPORTERS)(
      "%s %s: requires signatures, verified with ConfigMap aether-origin-keys, mounted read-only as a whole",
      (dir, kind) => {
        const { objects, w, container, args, config } = containerOf(dir, kind);
        const file = flagValue(args, "origin-keys");
        expect(args).toContain("--require-signatures");
        const { mount, volume } = mountHolding(w.pod, container, file);
        expect(mount?.readOnly, file).toBe(true);
        expect(mount?.subPath, "a subPath mount never sees the ConfigMap change").toBeUndefined();
        expect(volume?.configMap?.name).toBe(ORIGIN_KEYS_CONFIGMAP);
        expect(volume?.configMap?.optional, "required: no pod without the keys").toBe(false);
        expect(volume?.configMap?.items, "every key of the ConfigMap, by its name").toBeUndefined();
        // The key `kubectl create configmap --from-file=origin-keys.yaml` makes.
        expect(basename(file)).toBe("origin-keys.yaml");
        // aetherctl in the pod verifies with the same file.
        expect(containerEnv(container, objects).get("AETHER_ORIGIN_KEYS")).toBe(file);
        expect(config.requireSignatures).toBe(true);
        expect(config.originKeysFile).toBe(
          kind === "Deployment" ? local["origin-keys"] : "/etc/aether/origin-keys/origin-keys.yaml",
        );
      },
    );

    it.each(IMPORTERS)(
      "%s %s: every other arg, port, mount and variable is as in the plain install",
      (dir, kind) => {
        const signed = containerOf(dir, kind);
        const plain = containerOf(PLAIN[dir] as string, kind);
        expect(plain.args.filter((a) => ADDED.test(a))).toEqual([]);
        expect(signed.args.filter((a) => !ADDED.test(a))).toEqual(plain.args);
        expect(signed.container.ports).toEqual(plain.container.ports);
        const added = new Set(["origin-keys", "signing-key"]);
        const mounts = (c: Container) => (c.volumeMounts ?? []).filter((m) => !added.has(m.name));
        expect(mounts(signed.container)).toEqual(mounts(plain.container));
        const env = (c: Container) => (c.env ?? []).filter((e) => e.name !== "AETHER_ORIGIN_KEYS");
        expect(env(signed.container)).toEqual(env(plain.container));
        expect(signed.w.pod.securityContext).toEqual(plain.w.pod.securityContext);
      },
    );
  });

  describe("the signing key", () => {
    it(`${HUB}: the registrar signs with signing.key of Secret aether-signing-key, read-only, group-readable only`, () => {
      const { w, container, args, config } = containerOf(HUB, "Deployment");
      const file = flagValue(args, "signing-key-file");
      expect(basename(file)).toBe("signing.key");
      const { mount, volume } = mountHolding(w.pod, container, file);
      expect(mount?.readOnly, file).toBe(true);
      expect(mount?.subPath, "a subPath mount never sees the Secret change").toBeUndefined();
      expect(volume?.secret?.secretName).toBe(SIGNING_KEY_SECRET);
      expect(volume?.secret?.optional, "required: no hub exporting unsigned").toBe(false);
      expect(volume?.secret?.items).toBeUndefined();
      // The kubelet makes the files root's, with group fsGroup: the registrar
      // (not root) reads them through its group; nobody else reads, nobody writes.
      const mode = volume?.secret?.defaultMode ?? 0o644;
      const security = w.pod.securityContext as { runAsUser?: number; fsGroup?: number };
      expect(security.runAsUser).not.toBe(0);
      expect(security.fsGroup).toBeDefined();
      expect(mode & 0o040, "group-readable").toBe(0o040);
      expect(mode & 0o007, "not world-readable").toBe(0);
      expect(mode & 0o222, "not writable").toBe(0);
      expect((config as RegistrarConfig).signingKeyFile).toBe(local["signing-key-file"]);
    });

    it(`${EAST}: a spoke has no signing key, flag or Secret`, () => {
      const { w, args } = containerOf(EAST, "Deployment");
      expect(flagValues(args, "signing-key-file")).toEqual([]);
      expect(w.pod.volumes?.filter((v) => v.secret?.secretName === SIGNING_KEY_SECRET)).toEqual([]);
    });
  });

  describe("the key files", () => {
    /** The origin every importer trusts: the control cluster, as rendered. */
    const controlCluster = (dir: string) => {
      const { objects, container } = containerOf(dir, "Deployment");
      return containerEnv(container, objects, OPERATOR_ENV).get("AETHER_CONTROL_CLUSTER");
    };

    it(`${EXAMPLE_ORIGIN_KEYS} parses with the importers' parser: one key of the control cluster`, () => {
      const keys = parseOriginKeys(repoText(EXAMPLE_ORIGIN_KEYS), EXAMPLE_ORIGIN_KEYS);
      expect(controlCluster(HUB)).toBe("hub");
      expect(controlCluster(EAST)).toBe("hub");
      expect(keys.origins).toEqual(["hub"]);
      expect(keys.size).toBe(1);
    });

    it.each([
      ["ed25519", {}],
      ["ec", { namedCurve: "P-256" }],
    ] as const)(
      "a %s key made with node:crypto, in the example's format: accepted by the registrar, its signatures verify",
      (type, options) => {
        const pair = generateKeyPairSync(type as "ed25519", {
          ...options,
          privateKeyEncoding: { type: "pkcs8", format: "pem" },
          publicKeyEncoding: { type: "spki", format: "pem" },
        });
        const dir = mkdtempSync(join(scratch, "node-"));
        const keyFile = join(dir, "signing.key");
        const keysFile = join(dir, "origin-keys.yaml");
        writeFileSync(keyFile, pair.privateKey, { mode: 0o600 });
        writeFileSync(keysFile, exampleWithKey(pair.publicKey));
        const files = { ...local, "signing-key-file": keyFile, "origin-keys": keysFile };
        const config = containerOf(HUB, "Deployment", files).config as RegistrarConfig;
        expect([config.signingKeyFile, config.originKeysFile]).toEqual([keyFile, keysFile]);
        const signing = parseSigningKey(pair.privateKey, keyFile);
        const keys = parseOriginKeys(readFileSync(keysFile, "utf8"), keysFile);
        expect(keys.size).toBe(1);
        const key = keys.keysOf("hub")?.get(signing.keyId);
        expect(key, "the hub's key id is listed for origin hub").toBeDefined();
        const data = new TextEncoder().encode("a projection's signed bytes");
        const signature = signing.sign(data);
        expect(verifyWithKey(key as NonNullable<typeof key>, data, signature)).toBe(true);
        signature[0] = (signature[0] as number) ^ 1;
        expect(verifyWithKey(key as NonNullable<typeof key>, data, signature)).toBe(false);
      },
    );

    it("deploy/README.md's commands make a key and file the registrar reads, and print its key id", () => {
      const readme = repoText("deploy/README.md");
      const commands = [
        ...FIRST_KEY_COMMANDS,
        ECDSA_KEY_COMMAND,
        KEY_ID_COMMAND,
        ...ROTATION_COMMANDS,
        ROTATION_DONE_COMMAND,
      ];
      for (const command of commands) expect(readme.includes(command), command).toBe(true);
      const signing = parseSigningKey(readFileSync(local["signing-key-file"]), "signing.key");
      expect(runCommands(scratch, [KEY_ID_COMMAND]).trim()).toBe(signing.keyId);
      const keys = parseOriginKeys(readFileSync(local["origin-keys"], "utf8"), "origin-keys.yaml");
      expect(keys.origins).toEqual(["hub"]);
      expect([...(keys.keysOf("hub")?.keys() ?? [])]).toEqual([signing.keyId]);
    });

    it("deploy/README.md's ECDSA command makes a P-256 key the registrar signs with", () => {
      const dir = mkdtempSync(join(scratch, "ecdsa-"));
      const printed = runCommands(dir, [
        ECDSA_KEY_COMMAND,
        ...FIRST_KEY_COMMANDS.slice(1),
        KEY_ID_COMMAND,
      ]);
      const key = parseSigningKey(readFileSync(join(dir, "signing.key")), "signing.key");
      expect(printed.trim()).toBe(key.keyId);
      expect(key.algorithm).toBe(SignatureAlgorithm.ECDSA_P256_SHA256);
      const keys = parseOriginKeys(readFileSync(join(dir, "origin-keys.yaml"), "utf8"), "ecdsa");
      expect([...(keys.keysOf("hub")?.keys() ?? [])]).toEqual([key.keyId]);
      const files = {
        ...local,
        "signing-key-file": join(dir, "signing.key"),
        "origin-keys": join(dir, "origin-keys.yaml"),
      };
      const config = containerOf(HUB, "Deployment", files).config as RegistrarConfig;
      expect(config.signingKeyFile).toBe(files["signing-key-file"]);
    });

    it("deploy/README.md's rotation lists the old and the new key, then the new one alone", () => {
      const dir = mkdtempSync(join(scratch, "rotation-"));
      runCommands(dir, FIRST_KEY_COMMANDS);
      const old = parseSigningKey(readFileSync(join(dir, "signing.key")), "signing.key");
      runCommands(dir, ROTATION_COMMANDS);
      const next = parseSigningKey(readFileSync(join(dir, "signing-new.key")), "signing-new.key");
      const both = parseOriginKeys(readFileSync(join(dir, "origin-keys.yaml"), "utf8"), "both");
      expect(both.size).toBe(2);
      expect([...(both.keysOf("hub")?.keys() ?? [])].sort()).toEqual(
        [old.keyId, next.keyId].sort(),
      );
      runCommands(dir, [ROTATION_DONE_COMMAND]);
      const after = parseOriginKeys(readFileSync(join(dir, "origin-keys.yaml"), "utf8"), "after");
      expect([...(after.keysOf("hub")?.keys() ?? [])]).toEqual([next.keyId]);
    });
  });
});
