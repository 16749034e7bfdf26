/**
 * A trust domain's X.509 authorities, from the file `--trust-domain-bundle
 * TRUST_DOMAIN=PATH` names: a PEM CA bundle (every CERTIFICATE block a CA), or
 * a SPIFFE bundle (JWKS JSON, as SPIRE's federation endpoint serves it; see
 * spiffe-bundle.ts). The format is told by the text: JSON starts with `{` (or `[`).
 * Pure over its input text (no file is read here).
 */
import type { X509Certificate } from "node:crypto";
import { describeCertificate, pemCertificates } from "./pem.js";
import { parseSpiffeBundle } from "./spiffe-bundle.js";

/** The X.509 authorities one trust domain's SVIDs must chain to. */
export interface TrustBundle {
  readonly trustDomain: string;
  /** Where it was read from (a path), for messages. */
  readonly source: string;
  readonly format: "pem" | "spiffe";
  /**
   * The CA certificates. May be empty for a SPIFFE bundle (the trust
   * domain revoked its keys, or publishes none for X.509): then no SVID of it
   * is trusted.
   */
  readonly authorities: readonly X509Certificate[];
  /** SPIFFE bundle entries skipped as the standard says (a `jwt-svid` key, an unknown `use`), one sentence each. */
  readonly ignored: readonly string[];
  /** A SPIFFE bundle's `spiffe_sequence`, when it has one. */
  readonly sequence?: number;
}

/** Trust domain name → its bundle. */
export type TrustBundles = ReadonlyMap<string, TrustBundle>;

/**
 * Parses the bundle of `trustDomain` read from `source`. Throws an Error
 * naming the source and what is wrong: empty, neither PEM nor JSON, a PEM
 * block that is not a certificate or not a CA, or an invalid SPIFFE bundle.
 */
export function parseTrustBundle(trustDomain: string, text: string, source: string): TrustBundle {
  const start = text.trimStart();
  if (start.startsWith("{") || start.startsWith("[")) {
    return { trustDomain, source, format: "spiffe", ...parseSpiffeBundle(text, source) };
  }
  if (!text.includes("-----BEGIN ")) {
    throw new Error(
      start === ""
        ? `${source} is empty`
        : `${source} is neither a PEM CA bundle nor a SPIFFE bundle (JWKS JSON)`,
    );
  }
  const authorities = pemCertificates(text, source);
  for (const [index, certificate] of authorities.entries()) {
    if (!certificate.ca) {
      throw new Error(
        `${source}: certificate ${index + 1} (${describeCertificate(certificate)}) is not a CA (basicConstraints CA:TRUE); a bundle holds the CAs an SVID must chain to`,
      );
    }
  }
  return { trustDomain, source, format: "pem", authorities, ignored: [] };
}

/** The PEM text of every authority of every bundle: the `ca` of a TLS context, so that a peer is asked for a certificate of one of them. */
export function bundleAuthoritiesPem(bundles: TrustBundles): string[] {
  return [...bundles.values()].flatMap((bundle) =>
    bundle.authorities.map((authority) => authority.toString()),
  );
}
