/**
 * The sandbox's PKI on disk (`ensureSandboxPki`), made with the real
 * openssl in a temp directory: what it holds, that a second run reuses it
 * file for file, and that it is made anew when the listen host is not named
 * or a key no longer matches its certificate.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { copyFile, mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ensureSandboxPki, type SandboxPki } from "../../services/sandbox/sandbox-pki.js";

const CLUSTERS = ["hub", "east", "west"];
const SPOKES = ["east", "west"];

describe("the sandbox's PKI", () => {
  let root: string;
  let dir: string;
  let first: SandboxPki;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), "aether-sandbox-pki-test-"));
    dir = join(root, ".sandbox", "pki");
    first = await ensureSandboxPki(dir, CLUSTERS, SPOKES, "127.0.0.1");
  }, 30_000);

  afterAll(async () => {
    await rm(root, { recursive: true, force: true });
  });

  const cert = async (file: string) => new X509Certificate(await readFile(file));

  it("makes a CA per trust domain and SVIDs with the right IDs, registrars also naming loopback", async () => {
    expect(first.reused).toBe(false);
    const hubCa = await cert(first.bundles.get("hub") as string);
    const operator = await cert(first.operator.cert);
    expect(operator.subjectAltName).toBe(
      "URI:spiffe://hub.mesh/ns/aether-system/sa/aether-operator",
    );
    expect(operator.checkIssued(hubCa)).toBe(true);
    const east = await cert(first.svids.get("east-registrar")?.cert as string);
    expect(east.subjectAltName).toContain(
      "URI:spiffe://east.mesh/ns/aether-system/sa/aether-registrar",
    );
    expect(east.checkIP("127.0.0.1")).toBe("127.0.0.1");
    expect(east.checkHost("localhost")).toBe("localhost");
    expect(east.checkIssued(await cert(first.bundles.get("east") as string))).toBe(true);
    expect(east.checkIssued(hubCa)).toBe(false);
    const caBundle = await readFile(first.caBundle, "utf8");
    expect(caBundle.match(/BEGIN CERTIFICATE/g)).toHaveLength(3);
    for (const { key } of first.svids.values()) expect((await stat(key)).mode & 0o777).toBe(0o600);
  });

  it("is reused by the next run, file for file", async () => {
    const before = await readFile(first.operator.cert);
    const again = await ensureSandboxPki(dir, CLUSTERS, SPOKES, "127.0.0.1");
    expect(again.reused).toBe(true);
    expect(await readFile(again.operator.cert)).toEqual(before);
  });

  it("is made anew for a listen host its registrars do not name, then reused for loopback too", async () => {
    const before = await readFile(first.operator.cert);
    const other = await ensureSandboxPki(dir, CLUSTERS, SPOKES, "10.1.2.3");
    expect(other.reused).toBe(false);
    expect(await readFile(other.operator.cert)).not.toEqual(before);
    const hub = await cert(other.svids.get("hub-registrar")?.cert as string);
    expect(hub.checkIP("10.1.2.3")).toBe("10.1.2.3");
    expect((await ensureSandboxPki(dir, CLUSTERS, SPOKES, "127.0.0.1")).reused).toBe(true);
  }, 30_000);

  it("is made anew when a key no longer matches its certificate", async () => {
    const pki = await ensureSandboxPki(dir, CLUSTERS, SPOKES, "127.0.0.1");
    const eastAgent = pki.svids.get("east-agent") as { cert: string; key: string };
    await copyFile(pki.operator.key, eastAgent.key);
    const remade = await ensureSandboxPki(dir, CLUSTERS, SPOKES, "127.0.0.1");
    expect(remade.reused).toBe(false);
    const agent = await cert(eastAgent.cert);
    expect(agent.checkPrivateKey(createPrivateKey(await readFile(eastAgent.key)))).toBe(true);
  }, 30_000);

  it("two sandboxes starting at once over the same empty directory both get one good PKI", async () => {
    const shared = join(root, "shared", "pki");
    const both = await Promise.all([
      ensureSandboxPki(shared, CLUSTERS, SPOKES, "127.0.0.1"),
      ensureSandboxPki(shared, CLUSTERS, SPOKES, "127.0.0.1"),
    ]);
    expect(both.map((pki) => pki.dir)).toEqual([shared, shared]);
    expect((await ensureSandboxPki(shared, CLUSTERS, SPOKES, "127.0.0.1")).reused).toBe(true);
  }, 30_000);
});
