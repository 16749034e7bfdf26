/**
 * aetherctl's `--origin-keys`: where the path comes from (the flag, else
 * `$AETHER_ORIGIN_KEYS`), and a bad file as a usage error naming the file
 * and never quoting key material, both from the loader and from a whole run
 * (exit 2 with the command's usage, before any call to a registrar).
 */
import { generateKeyPairSync } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { COMMAND_USAGE } from "../../clients/aetherctl/aetherctl-flags.js";
import { loadOriginKeysCheck, originKeysSource } from "../../clients/aetherctl/origin-keys-file.js";
import { UsageError } from "../../services/process/usage-error.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const PRIVATE_PEM = privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const PUBLIC_PEM = publicKey.export({ type: "spki", format: "pem" }).toString();
/** A line of each key's base64 body: none may appear in an error. */
const MATERIAL = [PRIVATE_PEM, PUBLIC_PEM].map((pem) => pem.split("\n")[1] as string);

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aetherctl-origin-keys-"));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

async function file(name: string, text: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, text);
  return path;
}

describe("originKeysSource", () => {
  it.each([
    { flag: undefined, env: {}, want: undefined },
    { flag: undefined, env: { AETHER_ORIGIN_KEYS: "" }, want: undefined },
    {
      flag: undefined,
      env: { AETHER_ORIGIN_KEYS: "/e.yaml" },
      want: { path: "/e.yaml", label: "$AETHER_ORIGIN_KEYS" },
    },
    {
      flag: "/f.yaml",
      env: { AETHER_ORIGIN_KEYS: "/e.yaml" },
      want: { path: "/f.yaml", label: "--origin-keys" },
    },
  ])("flag $flag, env $env", ({ flag, env, want }) => {
    expect(originKeysSource(flag, env)).toEqual(want);
  });
});

describe("loadOriginKeysCheck", () => {
  it("refuses bad files with a usage error naming the file, never a key", async () => {
    const cases = [
      {
        path: join(dir, "missing.yaml"),
        message: /^--origin-keys: cannot read .*missing\.yaml \(ENOENT\)$/,
      },
      {
        path: await file("private.yaml", PRIVATE_PEM),
        message: /private\.yaml: expected a map "origins"/,
      },
      {
        path: await file(
          "private-in-list.yaml",
          JSON.stringify({ origins: { hub: [PRIVATE_PEM] } }),
        ),
        message: /private-in-list\.yaml: origins\.hub\[0\] is not one PEM public key/,
      },
      {
        path: await file("broken.yaml", "origins: [\n"),
        message: /broken\.yaml: not YAML or JSON/,
      },
    ];
    for (const { path, message } of cases) {
      const error = await loadOriginKeysCheck({ path, label: "--origin-keys" }, "get").then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(UsageError);
      expect((error as UsageError).command).toBe("get");
      expect((error as UsageError).message).toMatch(message);
      for (const line of MATERIAL) expect((error as UsageError).message).not.toContain(line);
    }
  });

  it("accepts a file of public keys", async () => {
    const path = await file("keys.yaml", JSON.stringify({ origins: { hub: [PUBLIC_PEM] } }));
    const check = await loadOriginKeysCheck({ path, label: "--origin-keys" }, "list");
    expect(check.required).toBe(true);
  });
});

describe("aetherctl with a bad --origin-keys file", () => {
  it("exits 2 with the file named and the command's usage, from the flag or the variable", async () => {
    const path = await file("run-private.yaml", PRIVATE_PEM);
    // The file is refused before any call to a registrar (none runs here).
    const byFlag = await runAetherctlInProcess(["get", "shop/cart", "--origin-keys", path]);
    expect(byFlag.code).toBe(2);
    expect(byFlag.stdout).toBe("");
    expect(byFlag.stderr).toBe(
      `aetherctl: --origin-keys ${path}: expected a map "origins" of origin names to lists of PEM public keys\n\n${COMMAND_USAGE.get}`,
    );
    const byEnv = await runAetherctlInProcess(["list"], { env: { AETHER_ORIGIN_KEYS: path } });
    expect(byEnv.code).toBe(2);
    expect(byEnv.stderr).toMatch(/^aetherctl: \$AETHER_ORIGIN_KEYS .*run-private\.yaml: expected/);
    expect(byEnv.stderr.endsWith(COMMAND_USAGE.list)).toBe(true);
    for (const line of MATERIAL) expect(byFlag.stderr + byEnv.stderr).not.toContain(line);
  });
});
