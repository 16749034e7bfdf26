/**
 * The ready-to-paste commands the sandbox's banner prints against its first
 * spoke: `curl` of an agent's table and a registrar's admin port,
 * `npm run aetherctl`, `npx buf curl` and `curl` of the ConfigService, with
 * the operator's certificate when the sandbox serves mutual TLS: aetherctl
 * takes it from the operator's environment file (`operator-env.ts`), loaded
 * once by the line `source`; buf curl and curl by their own flags. Paths
 * are relative to the working directory when under it. Pure.
 */
import { relative } from "node:path";
import type { SandboxInfo } from "./sandbox.js";
import { trustDomainOf } from "./sandbox-identities.js";

/** A path relative to `cwd` when it is under it, else as is. */
export function shortPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel === "" || rel.startsWith("..") ? path : rel;
}

/** `text` as one POSIX shell word: as is when it needs no quoting, else in single quotes. */
export function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/**
 * `. PATH`, the line that loads the file at `path` into a POSIX shell, with
 * `./` when `path` has no slash (`.` would look for it in `$PATH`).
 */
export function sourceLine(path: string): string {
  return `. ${shellWord(path.includes("/") ? path : `./${path}`)}`;
}

/** The commands of {@link sandboxCommands}, before the `explain` and `watch` examples. */
export interface SandboxCommands {
  /**
   * `. FILE`: loads the operator's environment file into the shell, before
   * `aetherctl`; undefined with `--plaintext` (or when the file could not be written).
   */
  readonly source: string | undefined;
  /**
   * `npm run aetherctl -- --registrar URL`: append a command. With mutual
   * TLS it needs `source` first, or, when there is none, carries the TLS flags.
   */
  readonly aetherctl: string;
  /** The ConfigService's `npx buf curl` commands (list methods, ListAllConfig). */
  readonly buf: readonly string[];
  /** `curl` of the ConfigService's ListAllConfig (Connect JSON). */
  readonly curl: string;
  /** `curl` of the spoke registrar's `/readyz` on its admin port. */
  readonly readyz: string;
}

/**
 * The commands against `spoke` (a registrar of `info`), with the operator's
 * SVID and the bundles of `info.pki` when it serves mutual TLS.
 */
export function sandboxCommands(
  info: SandboxInfo,
  spoke: SandboxInfo["registrars"][number],
  cwd: string,
): SandboxCommands {
  const path = (file: string) => shellWord(shortPath(file, cwd));
  const method = `${spoke.url}/aether.registry.v1.ConfigService`;
  const body = `-d '{"services":["shop/checkout"]}'`;
  const pki = info.pki;
  const readyz = `curl -s ${spoke.adminUrl}/readyz`;
  const aetherctl = `npm run aetherctl -- --registrar ${spoke.url}`;
  if (pki === undefined) {
    const buf = "npx buf curl --protocol grpc --http2-prior-knowledge";
    return {
      source: undefined,
      aetherctl,
      buf: [`${buf} --list-methods ${spoke.url}`, `${buf} ${body} ${method}/ListAllConfig`],
      curl: `curl -s ${method}/ListAllConfig -H 'content-type: application/json' ${body}`,
      readyz,
    };
  }
  const cert = `--cert ${path(pki.operator.cert)} --key ${path(pki.operator.key)}`;
  const certs = `--cacert ${path(pki.caBundle)} ${cert}`;
  const bundle = pki.bundles.get(spoke.cluster) ?? pki.caBundle;
  const buf = `npx buf curl --protocol grpc ${certs}`;
  const env = info.operatorEnv;
  const written = env !== undefined && env.problem === undefined;
  return {
    source: written ? sourceLine(shortPath(env.file, cwd)) : undefined,
    aetherctl: written
      ? aetherctl
      : [
          aetherctl,
          `--tls-cert-file ${path(pki.operator.cert)} --tls-key-file ${path(pki.operator.key)}`,
          `--trust-domain-bundle ${trustDomainOf(spoke.cluster)}=${path(bundle)}`,
        ].join(" "),
    buf: [`${buf} --list-methods ${spoke.url}`, `${buf} ${body} ${method}/ListAllConfig`],
    curl: `curl -s ${certs} ${method}/ListAllConfig -H 'content-type: application/json' ${body}`,
    readyz,
  };
}
