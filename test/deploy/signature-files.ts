/**
 * The key files of signed projections as an operator makes them for
 * deploy/components/signatures and signing-key: the shell commands that
 * deploy/README.md gives (run here with bash and openssl, in a scratch
 * directory), and the example origin-keys.yaml with another key put in its
 * place.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ROOT } from "./rendered-manifests.js";

/** The example file of the shape of ConfigMap aether-origin-keys's key. */
export const EXAMPLE_ORIGIN_KEYS = "deploy/examples/hub-signatures/origin-keys.yaml";

/** deploy/README.md's commands that make the hub's key and the first origin-keys.yaml. */
export const FIRST_KEY_COMMANDS = [
  "openssl genpkey -algorithm ed25519 -out signing.key",
  "openssl pkey -in signing.key -pubout -out signing.pub",
  String.raw`{ printf 'origins:\n  hub:\n    - |\n'; sed 's/^/      /' signing.pub; } > origin-keys.yaml`,
];

/** deploy/README.md's command that makes an ECDSA P-256 key instead. */
export const ECDSA_KEY_COMMAND =
  "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out signing.key";

/** deploy/README.md's command that prints a key's id, as aetherctl and the registrar show it. */
export const KEY_ID_COMMAND =
  "openssl pkey -in signing.key -pubout -outform DER | openssl dgst -sha256 -r | cut -c1-16";

/** deploy/README.md's rotation, step 1: the new key, and an origin-keys.yaml with both. */
export const ROTATION_COMMANDS = [
  "openssl genpkey -algorithm ed25519 -out signing-new.key",
  "openssl pkey -in signing-new.key -pubout -out signing-new.pub",
  String.raw`{ printf 'origins:\n  hub:\n    - |\n'; sed 's/^/      /' signing.pub; printf '    - |\n'; sed 's/^/      /' signing-new.pub; } > origin-keys.yaml`,
];

/** deploy/README.md's rotation, last step: origin-keys.yaml with the new key alone. */
export const ROTATION_DONE_COMMAND = String.raw`{ printf 'origins:\n  hub:\n    - |\n'; sed 's/^/      /' signing-new.pub; } > origin-keys.yaml`;

/** Runs `commands` with bash in `dir` (stopping at the first failure); returns stdout. */
export function runCommands(dir: string, commands: readonly string[]): string {
  return execFileSync("bash", ["-euo", "pipefail", "-c", commands.join("\n")], {
    cwd: dir,
    encoding: "utf8",
  });
}

/** The text of a file of the repository. */
export function repoText(path: string): string {
  return readFileSync(join(ROOT, path), "utf8");
}

const PEM_BLOCK = /^( *)-----BEGIN PUBLIC KEY-----\n(?:\1.*\n)*?\1-----END PUBLIC KEY-----\n/m;

/**
 * The example origin-keys.yaml with its public key replaced by `publicKeyPem`
 * (PEM SPKI), indented as the example's is: the file an operator makes by
 * editing the example. Throws when the example has no PEM block.
 */
export function exampleWithKey(publicKeyPem: string): string {
  const example = repoText(EXAMPLE_ORIGIN_KEYS);
  const match = PEM_BLOCK.exec(example);
  if (match === null) throw new Error(`${EXAMPLE_ORIGIN_KEYS} holds no PEM public key`);
  const indent = match[1] as string;
  const lines = publicKeyPem.trimEnd().split("\n");
  return example.replace(PEM_BLOCK, () => `${lines.map((l) => indent + l).join("\n")}\n`);
}
