/**
 * The ready-to-paste commands the sandbox's banner prints against its first
 * spoke: `curl` of an agent's table and a registrar's admin port,
 * `npm run aetherctl`, `npx buf curl` and `curl` of the ConfigService, with
 * the operator's certificate flags when the sandbox serves mutual TLS.
 * Paths are relative to the working directory when under it. Pure.
 */
import { relative } from "node:path";
import type { SandboxInfo } from "./sandbox.js";
import { trustDomainOf } from "./sandbox-identities.js";

/** A path relative to `cwd` when it is under it, else as is. */
export function shortPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel === "" || rel.startsWith("..") ? path : rel;
}

/** `text` as one shell word: as is when it needs no quoting, else in single quotes. */
function shellWord(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replaceAll("'", "'\\''")}'`;
}

/** The commands of {@link sandboxCommands}, before the `explain` and `watch` examples. */
export interface SandboxCommands {
  /** `npm run aetherctl -- --registrar URL [TLS flags]`: append a command. */
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
  if (pki === undefined) {
    const buf = "npx buf curl --protocol grpc --http2-prior-knowledge";
    return {
      aetherctl: `npm run aetherctl -- --registrar ${spoke.url}`,
      buf: [`${buf} --list-methods ${spoke.url}`, `${buf} ${body} ${method}/ListAllConfig`],
      curl: `curl -s ${method}/ListAllConfig -H 'content-type: application/json' ${body}`,
      readyz,
    };
  }
  const cert = `--cert ${path(pki.operator.cert)} --key ${path(pki.operator.key)}`;
  const certs = `--cacert ${path(pki.caBundle)} ${cert}`;
  const bundle = pki.bundles.get(spoke.cluster) ?? pki.caBundle;
  const buf = `npx buf curl --protocol grpc ${certs}`;
  return {
    aetherctl: [
      `npm run aetherctl -- --registrar ${spoke.url}`,
      `--tls-cert-file ${path(pki.operator.cert)} --tls-key-file ${path(pki.operator.key)}`,
      `--trust-domain-bundle ${trustDomainOf(spoke.cluster)}=${path(bundle)}`,
    ].join(" "),
    buf: [`${buf} --list-methods ${spoke.url}`, `${buf} ${body} ${method}/ListAllConfig`],
    curl: `curl -s ${certs} ${method}/ListAllConfig -H 'content-type: application/json' ${body}`,
    readyz,
  };
}
