/**
 * Parsers of the mutual-TLS flags the registrar, the agent and aetherctl
 * share: `--trust-domain-bundle TRUST_DOMAIN=PATH` (repeatable),
 * `--authorize PATTERN` (repeatable) and a flag naming one SPIFFE ID
 * (`--registrar-spiffe-id`). Each throws a {@link UsageError} that names the
 * flag and the value.
 */
import { type AuthorizePattern, parseAuthorizePattern } from "../common/spiffe-authorize.js";
import { checkTrustDomain, parseSpiffeId, type SpiffeId } from "../common/spiffe-id.js";
import { UsageError } from "./usage-error.js";

const BUNDLE_FLAG = "--trust-domain-bundle";

/**
 * Parses one `--trust-domain-bundle` value, `TRUST_DOMAIN=PATH`. The trust
 * domain may be written bare (`east.mesh`) or as its SPIFFE ID
 * (`spiffe://east.mesh`); the path must not be empty. The file itself is not
 * read here. Errors name `label` (the flag, or the environment variable the
 * value came from).
 */
export function parseTrustDomainBundleFlag(
  value: string,
  label: string = BUNDLE_FLAG,
): {
  trustDomain: string;
  path: string;
} {
  const quoted = JSON.stringify(value);
  const equals = value.indexOf("=");
  if (equals === -1) {
    throw new UsageError(
      `${label} ${quoted} is not TRUST_DOMAIN=PATH (for example east.mesh=/run/spire/bundles/east.pem)`,
    );
  }
  const name = value.slice(0, equals);
  const path = value.slice(equals + 1);
  const trustDomain = name.startsWith("spiffe://") ? name.slice("spiffe://".length) : name;
  const problem = checkTrustDomain(trustDomain);
  if (problem !== undefined) throw new UsageError(`${label} ${quoted}: ${problem}`);
  if (path === "") throw new UsageError(`${label} ${quoted}: the bundle's path is missing`);
  return { trustDomain, path };
}

/**
 * Parses every `--trust-domain-bundle` value into trust domain → bundle
 * path. A trust domain given twice is a usage error (one bundle file per
 * trust domain; a file may hold several CAs). Errors name `label`.
 */
export function parseTrustDomainBundleFlags(
  values: readonly string[],
  label: string = BUNDLE_FLAG,
): Map<string, string> {
  const bundles = new Map<string, string>();
  for (const value of values) {
    const { trustDomain, path } = parseTrustDomainBundleFlag(value, label);
    const earlier = bundles.get(trustDomain);
    if (earlier !== undefined) {
      throw new UsageError(
        `${label} names trust domain ${trustDomain} twice (${earlier} and ${path}); put every CA of a trust domain in one file`,
      );
    }
    bundles.set(trustDomain, path);
  }
  return bundles;
}

/** Parses every `--authorize` value; an invalid pattern is a usage error naming it. */
export function parseAuthorizeFlags(values: readonly string[]): AuthorizePattern[] {
  return values.map((value) => {
    const parsed = parseAuthorizePattern(value);
    if (parsed.error !== undefined) throw new UsageError(parsed.error);
    return parsed.pattern;
  });
}

/**
 * Parses a flag whose value is one workload's SPIFFE ID (`flag` without its
 * dashes, e.g. `registrar-spiffe-id`): valid, and with a path, since a
 * trust domain's own ID is never a workload's. Errors name `label` (by
 * default the flag; the environment variable the value came from).
 */
export function parseSpiffeIdFlag(flag: string, value: string, label = `--${flag}`): SpiffeId {
  const parsed = parseSpiffeId(value);
  if (parsed.error !== undefined) throw new UsageError(`${label}: ${parsed.error}`);
  if (parsed.id.path === "") {
    throw new UsageError(
      `${label} ${JSON.stringify(value)} names a trust domain; a workload's SPIFFE ID has a path (spiffe://${parsed.id.trustDomain}/ns/NAMESPACE/sa/ACCOUNT)`,
    );
  }
  return parsed.id;
}
