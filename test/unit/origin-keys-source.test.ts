/**
 * The `--origin-keys` file of a running importer over real files and real
 * watches: a new key is taken, a symlink swap (how Kubernetes updates a
 * mounted ConfigMap) is taken, a bad re-read keeps the keys in force and is
 * reported once with the file's name (never a key), and a bad file at start
 * is an error naming it.
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { keyIdOf } from "../../services/signing/key-algorithm.js";
import {
  createOriginKeysSource,
  readOriginKeysFile,
} from "../../services/signing/origin-keys-source.js";
import { waitFor } from "../support/wait.js";

const SETTLE = { settleMs: 20, retries: 1 };

function newKey() {
  const { publicKey } = generateKeyPairSync("ed25519");
  return {
    pem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    id: keyIdOf(publicKey),
  };
}

const file = (keys: readonly string[]) => JSON.stringify({ origins: { hub: keys } });

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-origin-keys-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("the origin-keys source", () => {
  it("takes a changed file, keeps its keys on a bad one and reports it once", async () => {
    const path = join(dir, "keys.json");
    const a = newKey();
    const b = newKey();
    await writeFile(path, file([a.pem]));
    const updates: string[][] = [];
    const refusals: string[] = [];
    const source = createOriginKeysSource({
      path,
      settle: SETTLE,
      pollIntervalMs: 50,
      onUpdate: (keys) => updates.push([...(keys.keysOf("hub")?.keys() ?? [])]),
      onRejected: (message) => refusals.push(message),
    });
    source.start();
    try {
      expect([...(source.keys.keysOf("hub")?.keys() ?? [])]).toEqual([a.id]);
      await writeFile(path, file([a.pem, b.pem]));
      await waitFor(() => source.keys.keysOf("hub")?.has(b.id) === true, 5_000, "key b");
      await writeFile(path, "origins: {hub: [not a key]}");
      await waitFor(() => source.failures === 1, 5_000, "a refused re-read");
      expect(source.keys.keysOf("hub")?.has(b.id)).toBe(true);
      expect(refusals).toHaveLength(1);
      expect(refusals[0]).toContain(path);
      expect(refusals[0]).not.toContain(a.pem.split("\n")[1]);
      await writeFile(path, file([b.pem]));
      await waitFor(() => source.keys.keysOf("hub")?.has(a.id) === false, 5_000, "key a removed");
      expect(updates.at(-1)).toEqual([b.id]);
      // The bad content, seen again at each re-stat until it was fixed, was reported once.
      expect(source.failures).toBe(1);
    } finally {
      source.close();
    }
  });

  it("follows a symlink swap of the mounted directory", async () => {
    const mount = join(dir, "mount");
    await mkdir(join(mount, "..v1"), { recursive: true });
    await mkdir(join(mount, "..v2"), { recursive: true });
    const a = newKey();
    const b = newKey();
    await writeFile(join(mount, "..v1", "keys.yaml"), file([a.pem]));
    await writeFile(join(mount, "..v2", "keys.yaml"), file([b.pem]));
    await symlink("..v1", join(mount, "..data"));
    await symlink("..data/keys.yaml", join(mount, "keys.yaml"));
    const source = createOriginKeysSource({ path: join(mount, "keys.yaml"), settle: SETTLE });
    source.start();
    try {
      expect(source.keys.keysOf("hub")?.has(a.id)).toBe(true);
      await symlink("..v2", join(mount, "..data_tmp"));
      await rename(join(mount, "..data_tmp"), join(mount, "..data"));
      // Found by the directory watch (the re-stat is 5 s away).
      await waitFor(() => source.keys.keysOf("hub")?.has(b.id) === true, 3_000, "key b");
    } finally {
      source.close();
    }
  });

  it("refuses a bad file at start, naming it", async () => {
    const path = join(dir, "bad.yaml");
    await writeFile(path, "origins: {hub: []}");
    expect(() => readOriginKeysFile(path)).toThrow(`${path}: origins.hub must be`);
    expect(() => readOriginKeysFile(join(dir, "missing.yaml"))).toThrow(
      `cannot read ${join(dir, "missing.yaml")}: ENOENT`,
    );
  });
});
