/**
 * The operator's environment file (`operator.env` in the PKI directory):
 * POSIX `export` lines setting aetherctl's TLS defaults
 * (`clients/aetherctl/tls-env.ts`) to the operator's SVID and every trust
 * domain's bundle, so that after `. .sandbox/pki/operator.env` the printed
 * aetherctl commands need no TLS flags. Paths only, never key material.
 *
 * Paths are absolute: the variables outlive the line that set them (a `cd`,
 * aetherctl run other than through `npm run`, which always starts in the
 * repository root), and an absolute path means the same file from anywhere.
 * The file is rewritten at every start, so a moved repository is followed.
 * Pure.
 */
import { join } from "node:path";
import { shellWord } from "./sandbox-commands.js";
import { OPERATOR_ID, trustDomainOf } from "./sandbox-identities.js";
import type { SandboxPki } from "./sandbox-pki.js";

/** The file's name in the PKI directory. */
export const OPERATOR_ENV_FILE = "operator.env";

/**
 * The variables the file sets, as aetherctl reads them (`CLIENT_TLS_ENV` of
 * `clients/aetherctl/tls-env.ts`, which the sandbox may not import; a unit
 * test holds the two together).
 */
export const OPERATOR_ENV_VARS = {
  cert: "AETHER_TLS_CERT_FILE",
  key: "AETHER_TLS_KEY_FILE",
  bundles: "AETHER_TRUST_DOMAIN_BUNDLE",
  originKeys: "AETHER_ORIGIN_KEYS",
} as const;

/** The file to write, or why it cannot carry the PKI's paths. */
export type OperatorEnv =
  | { readonly file: string; readonly text: string }
  | { readonly file: string; readonly problem: string };

/**
 * The environment file of `pki` (its paths absolute, as `ensureSandboxPki`
 * gives them), with `originKeysFile` (absolute) as aetherctl's
 * `--origin-keys` default when the sandbox signs. A bundle path with a comma, or with white space at either end,
 * cannot be an item of `$AETHER_TRUST_DOMAIN_BUNDLE` (a comma-separated list
 * of trimmed items): then the problem, and the commands keep their flags.
 */
export function operatorEnv(pki: SandboxPki, originKeysFile?: string): OperatorEnv {
  const file = join(pki.dir, OPERATOR_ENV_FILE);
  const bundles = [...pki.bundles].map(([cluster, path]) => `${trustDomainOf(cluster)}=${path}`);
  const unlisted = [...pki.bundles.values()].find((path) => /,|^\s|\s$/.test(path));
  if (unlisted !== undefined) {
    return {
      file,
      problem: `the bundle path ${JSON.stringify(unlisted)} cannot be an item of $${OPERATOR_ENV_VARS.bundles} (a comma-separated list)`,
    };
  }
  const lines = [
    `# aetherctl's TLS defaults as the sandbox's operator, ${OPERATOR_ID}.`,
    "# Load it into a POSIX shell with `. FILE`. Paths only; rewritten by every `npm start`.",
    `export ${OPERATOR_ENV_VARS.cert}=${shellWord(pki.operator.cert)}`,
    `export ${OPERATOR_ENV_VARS.key}=${shellWord(pki.operator.key)}`,
    `export ${OPERATOR_ENV_VARS.bundles}=${shellWord(bundles.join(","))}`,
    ...(originKeysFile === undefined
      ? []
      : [`export ${OPERATOR_ENV_VARS.originKeys}=${shellWord(originKeysFile)}`]),
  ];
  return { file, text: `${lines.join("\n")}\n` };
}
