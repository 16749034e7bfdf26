/**
 * The agent's followed `--origin-keys` file, on real files: a bad file at
 * start is an error naming it (never its contents); a ConfigMap-style
 * symlink swap and an in-place edit are picked up; a bad re-read keeps the
 * keys in force, is logged once naming the file and counted; the re-stat
 * finds a change no watch reported.
 */
import { mkdir, mkdtemp, rename, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type OriginKeysFile, openOriginKeysFile } from "../../clients/agent/origin-keys-file.js";
import { keyIdsOf } from "../../clients/agent/origin-keys-reload.js";
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
let file: OriginKeysFile | undefined;
afterEach(async () => {
  file?.close();
  file = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

/**
 * A ConfigMap volume's layout: `keys.json -> ..data/keys.json`,
 * `..data -> ..<version>`; {@link swap} publishes a new version atomically.
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
    const { logger } = captureLogger();
    const opening = openOriginKeysFile({ path, logger });
    await expect(opening).rejects.toThrow(`--origin-keys: ${path}: origins.hub[0] does not parse`);
    const message = await opening.catch((error: Error) => error.message);
    expect(message).not.toContain(bodyOf(first).slice(0, 20));
    await expect(openOriginKeysFile({ path: join(dir, "absent"), logger })).rejects.toThrow(
      /--origin-keys: cannot read .*absent: ENOENT/,
    );
  });

  it("follows ConfigMap swaps; a bad one keeps the keys in force, is logged once and counted", async () => {
    const volume = await configMapVolume(keysText(first));
    const captured = captureLogger();
    const reloads: string[] = [];
    const added: (readonly string[])[] = [];
    file = await openOriginKeysFile({
      path: volume.path,
      logger: captured.logger,
      debounceMs: 10,
      onReload: (result) => reloads.push(result),
      onKeysAdded: (ids) => added.push(ids),
    });
    expect(keyIdsOf(file.keys)).toEqual([`hub/${first.keyId}`]);

    await volume.swap(keysText(first, second));
    await waitFor(() => file?.keys.size === 2, 5_000, "the added key");
    expect(added).toEqual([[`hub/${second.keyId}`]]);

    await volume.swap("origins: [");
    await waitFor(() => reloads.includes("refused"), 5_000, "the refused re-read");
    expect(file.keys.size).toBe(2);
    const warnings = captured.withMessage("origin keys file refused; keeping the keys in force");
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.file).toBe(volume.path);
    expect(warnings[0]?.problem).toMatch(/not YAML or JSON/);

    await volume.swap(keysText(second));
    await waitFor(() => file?.keys.size === 1, 5_000, "the removed key");
    expect(keyIdsOf(file.keys)).toEqual([`hub/${second.keyId}`]);
    expect(added).toHaveLength(1); // a removal adds nothing
    expect(reloads.filter((r) => r === "refused")).toHaveLength(1);
    expect(JSON.stringify(captured.lines)).not.toContain(bodyOf(first));
  });

  it("finds a change by re-stating when no watch reports it", async () => {
    dir = await mkdtemp(join(tmpdir(), "agent-origin-keys-"));
    const path = join(dir, "keys.json");
    await writeFile(path, keysText(first));
    file = await openOriginKeysFile({
      path,
      logger: captureLogger().logger,
      // A debounce longer than the test: only the re-stat can see the edit.
      debounceMs: 60_000,
      pollIntervalMs: 50,
    });
    await writeFile(path, keysText(first, second));
    await waitFor(() => file?.keys.size === 2, 5_000, "the re-stat");
  });
});
