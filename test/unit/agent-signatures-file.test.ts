/**
 * The agent's `--origin-keys` file as `createAgentSignatures` follows it
 * (over the shared origin-keys source), on real files: a bad file at start
 * is an error naming it (never its contents); a ConfigMap-style symlink swap
 * is picked up; a key added asks for a resync, a removal does not; a bad
 * re-read keeps the keys in force, is logged once naming the file and
 * counted.
 */
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentSignatures,
  createAgentSignatures,
} from "../../clients/agent/agent-signatures.js";
import type { SigningKey } from "../../services/signing/signing-key.js";
import { captureLogger } from "../support/capture-logger.js";
import { newSigningKey, originKeysText } from "../support/signing-keys.js";
import { waitFor } from "../support/wait.js";

const first = newSigningKey();
const second = newSigningKey();
const keysText = (...keys: SigningKey[]) => originKeysText({ hub: keys });
/** The base64 body of a PEM key: what must never be logged or thrown. */
const bodyOf = (key: SigningKey) => key.publicKeyPem.split("\n")[1] as string;

let dir: string | undefined;
let signatures: AgentSignatures | undefined;
afterEach(async () => {
  signatures?.close();
  signatures = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/** Follows `path` with its reloads and added keys recorded. */
function follow(path: string) {
  const captured = captureLogger();
  const reloads: string[] = [];
  const added: (readonly string[])[] = [];
  signatures = createAgentSignatures({
    originKeysFile: path,
    require: true,
    logger: captured.logger,
    metrics: { countOriginKeysReload: (result) => reloads.push(result) },
    onKeysAdded: (ids) => added.push(ids),
  });
  return { signatures, captured, reloads, added };
}

/**
 * A ConfigMap volume's layout: `keys.json -> ..data/keys.json`,
 * `..data -> ..<version>`; `swap` publishes a new version atomically.
 */
async function configMapVolume(text: string) {
  const root = await mkdtemp(join(tmpdir(), "agent-origin-keys-"));
  dir = root;
  let version = 0;
  const publish = async (content: string) => {
    version++;
    const target = join(root, `..v${version}`);
    await mkdir(target);
    await writeFile(join(target, "keys.json"), content);
    await symlink(`..v${version}`, join(root, "..data_tmp"));
    await rename(join(root, "..data_tmp"), join(root, "..data"));
  };
  await publish(text);
  await symlink("..data/keys.json", join(root, "keys.json"));
  return { path: join(root, "keys.json"), swap: publish };
}

describe("the agent's --origin-keys file", () => {
  it("refuses a bad file at start, naming it and not its contents", async () => {
    dir = await mkdtemp(join(tmpdir(), "agent-origin-keys-"));
    const path = join(dir, "keys.json");
    const broken = keysText(first).replace(bodyOf(first), bodyOf(first).slice(0, 20));
    await writeFile(path, broken);
    const opening = follow(path).signatures;
    expect(() => opening.open()).toThrow(`--origin-keys: ${path}: origins.hub[0] does not parse`);
    let message = "";
    try {
      opening.open();
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).not.toContain(bodyOf(first).slice(0, 20));
    expect(opening.keys).toBe(0);
    expect(() => follow(join(dir as string, "absent")).signatures.open()).toThrow(
      /^--origin-keys: cannot read .*absent: ENOENT$/,
    );
  });

  it("follows ConfigMap swaps; a bad one keeps the keys in force, is logged once and counted", async () => {
    const volume = await configMapVolume(keysText(first));
    const { signatures, captured, reloads, added } = follow(volume.path);
    signatures.open();
    expect(signatures.keys).toBe(1);
    expect(captured.withMessage("origin keys read")[0]?.file).toBe(volume.path);

    await volume.swap(keysText(first, second));
    await waitFor(() => signatures.keys === 2, 5_000, "the added key");
    expect(added).toEqual([[`hub/${second.keyId}`]]);
    expect(reloads).toEqual(["ok"]);

    await volume.swap("origins: [");
    await waitFor(() => reloads.includes("refused"), 5_000, "the refused re-read");
    expect(signatures.keys).toBe(2);
    const warnings = captured.withMessage("origin keys file refused; keeping the keys in force");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.file).toBe(volume.path);
    expect(warnings[0]?.problem).toMatch(/not YAML or JSON/);

    await volume.swap(keysText(second));
    await waitFor(() => signatures.keys === 1, 5_000, "the removed key");
    expect(added).toHaveLength(1); // a removal adds nothing
    expect(reloads).toEqual(["ok", "refused", "ok"]);
    const reread = captured.withMessage("origin keys re-read").at(-1);
    expect(reread?.removed).toEqual([`hub/${first.keyId}`]);
    expect(JSON.stringify(captured.lines)).not.toContain(bodyOf(first));
  });
});
