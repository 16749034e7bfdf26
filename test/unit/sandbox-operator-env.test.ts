/**
 * The sandbox's operator environment file (`operator-env.ts`,
 * `operator-env-file.ts`): the variables aetherctl reads, written whole over
 * an earlier run's file, sourced by a real `sh` into exactly the paths
 * (spaces and quotes included) that aetherctl's environment defaults turn
 * back into the operator's certificate and all three bundles; a bundle path
 * a comma-separated list cannot carry removes the file and says why.
 */
import { execFile } from "node:child_process";
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import { ORIGIN_KEYS_ENV, originKeysSource } from "../../clients/aetherctl/origin-keys-file.js";
import { CLIENT_TLS_ENV, withClientTlsEnv } from "../../clients/aetherctl/tls-env.js";
import { parseClientTlsFlags } from "../../services/process/client-tls-flags.js";
import { OPERATOR_ENV_VARS, operatorEnv } from "../../services/sandbox/operator-env.js";
import { writeOperatorEnv } from "../../services/sandbox/operator-env-file.js";
import type { SandboxPki } from "../../services/sandbox/sandbox-pki.js";

const run = promisify(execFile);
const CLUSTERS = ["hub", "east", "west"];

function pkiAt(dir: string): SandboxPki {
  const operator = { cert: join(dir, "operator.crt"), key: join(dir, "operator.key") };
  return {
    dir,
    bundles: new Map(CLUSTERS.map((c) => [c, join(dir, `${c}.mesh.pem`)])),
    caBundle: join(dir, "ca-bundle.pem"),
    svids: new Map([["operator", operator]]),
    operator,
    reused: false,
  };
}

/** The `AETHER_*` variables `sh` holds after `. file`, with nothing inherited. */
async function sourced(file: string): Promise<Record<string, string>> {
  const script = '. "$1" && env';
  const { stdout } = await run("sh", ["-c", script, "sh", file], {
    env: { PATH: "/usr/bin:/bin" },
  });
  const lines = stdout.split("\n").filter((line) => line.startsWith("AETHER_"));
  return Object.fromEntries(lines.map((line) => line.split(/=(.*)/s).slice(0, 2)));
}

const made: string[] = [];
afterEach(async () => {
  for (const dir of made.splice(0)) await rm(dir, { recursive: true, force: true });
});

async function tempPkiDir(name: string): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "aether-operator-env-"));
  made.push(root);
  const dir = join(root, name);
  await mkdir(dir);
  return dir;
}

describe("the sandbox's operator environment file", () => {
  it("sets the variables aetherctl reads for the client certificate and the bundles", () => {
    expect(OPERATOR_ENV_VARS).toEqual({
      cert: CLIENT_TLS_ENV["tls-cert-file"],
      key: CLIENT_TLS_ENV["tls-key-file"],
      bundles: CLIENT_TLS_ENV["trust-domain-bundle"],
      originKeys: ORIGIN_KEYS_ENV,
    });
  });

  it("sets aetherctl's --origin-keys default when the sandbox signs, and only then", async () => {
    const pki = pkiAt(await tempPkiDir("signing"));
    const keys = join(pki.dir, "..", "signing dir", "origin-keys.yaml");
    await writeOperatorEnv(pki, { keyFile: "/k", originKeysFile: keys, keyId: "0", reused: false });
    const env = await sourced(join(pki.dir, "operator.env"));
    expect(originKeysSource(undefined, env)).toEqual({ path: keys, label: "$AETHER_ORIGIN_KEYS" });
    await writeOperatorEnv(pki);
    expect(Object.keys(await sourced(join(pki.dir, "operator.env")))).not.toContain(
      ORIGIN_KEYS_ENV,
    );
  });

  it.each([["pki"], ["my pki"], ["it's $HOME `pki`"]])(
    "in a directory named %s: sourced by sh, aetherctl's defaults are the operator's files and all three bundles",
    async (name) => {
      const pki = pkiAt(await tempPkiDir(name));
      const { file } = await writeOperatorEnv(pki);
      expect(file).toBe(join(pki.dir, "operator.env"));
      const env = await sourced(file);
      expect(Object.keys(env).sort()).toEqual(
        Object.values(OPERATOR_ENV_VARS)
          .filter((name) => name !== ORIGIN_KEYS_ENV)
          .sort(),
      );
      const { values, labels } = withClientTlsEnv("https://127.0.0.1:8081", {}, env);
      const tls = parseClientTlsFlags("https://127.0.0.1:8081", values, labels);
      expect(tls).toEqual({
        certFile: pki.operator.cert,
        keyFile: pki.operator.key,
        bundleFiles: new Map(CLUSTERS.map((c) => [`${c}.mesh`, pki.bundles.get(c)])),
      });
    },
  );

  it("replaces an earlier run's file whole and leaves no temp file", async () => {
    const pki = pkiAt(await tempPkiDir("pki"));
    const file = join(pki.dir, "operator.env");
    await writeFile(file, "export AETHER_TLS_CERT_FILE=/stale/operator.crt\n");
    await writeOperatorEnv(pki);
    expect(await readFile(file, "utf8")).toBe((operatorEnv(pki) as { text: string }).text);
    expect(await readdir(pki.dir)).toEqual(["operator.env"]);
  });

  it("holds paths only, never key material", () => {
    const env = operatorEnv(pkiAt("/repo/.sandbox/pki")) as { text: string };
    expect(env.text).not.toMatch(/-----BEGIN|PRIVATE/);
    expect(env.text.match(/^export /gm)).toHaveLength(3);
  });

  it("with a comma in a bundle path: no file (an earlier one removed), and the reason", async () => {
    const pki = pkiAt(await tempPkiDir("a,b"));
    await writeFile(join(pki.dir, "operator.env"), "export AETHER_TLS_CERT_FILE=/stale\n");
    const written = await writeOperatorEnv(pki);
    expect(written.problem).toMatch(/cannot be an item of \$AETHER_TRUST_DOMAIN_BUNDLE/);
    expect(await readdir(pki.dir)).toEqual([]);
  });
});
