/**
 * BackendTLSPolicy settings (a projection's `backend_tls`) in words, for
 * `aetherctl get` (one block per targeted port) and `aetherctl explain` (the
 * settings that apply to the chosen backend). Never prints certificate text:
 * a CA bundle is described by its certificate count. Pure.
 */
import {
  type BackendTls,
  type ServiceConfigProjection,
  WellKnownCaCertificates,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { describePortScope } from "./projection-describe.js";

const STEP = "  ";

/** `system CAs`, or `CA bundle (2 certificates)`. */
function describeTrust(entry: BackendTls): string {
  if (entry.wellKnownCaCertificates === WellKnownCaCertificates.SYSTEM) return "system CAs";
  const count = entry.caCertificatesPem.split("-----BEGIN CERTIFICATE-----").length - 1;
  return `CA bundle (${count} ${count === 1 ? "certificate" : "certificates"})`;
}

/** `uri spiffe://…, hostname *.example.com`, or `""` when the entry names none. */
function describeSubjectAltNames(entry: BackendTls): string {
  return entry.subjectAltNames
    .map((san) => `${san.name.case === "uri" ? "uri" : "hostname"} ${san.name.value ?? ""}`)
    .join(", ");
}

/**
 * One line: `TLS, SNI web.shop.example, CA bundle (1 certificate), verify uri
 * spiffe://…, BackendTLSPolicy shop/web-tls`.
 */
export function describeBackendTls(entry: BackendTls): string {
  const sans = describeSubjectAltNames(entry);
  const verify = sans === "" ? `verify ${entry.hostname}` : `verify ${sans}`;
  return `TLS, SNI ${entry.hostname}, ${describeTrust(entry)}, ${verify}, BackendTLSPolicy ${entry.policyNamespace}/${entry.policyName}`;
}

/**
 * The `backend tls` blocks of `aetherctl get`, one per entry, for example:
 *
 * ```text
 * BackendTLSPolicy shop/web-tls: port 443 (https)
 *   hostname: web.shop.example (SNI)
 *   trust: CA bundle (1 certificate)
 *   subject alt names: uri spiffe://hub.mesh/ns/shop/sa/web
 * ```
 *
 * Empty when the projection has none.
 */
export function backendTlsLines(projection: ServiceConfigProjection): string[] {
  return projection.backendTls.flatMap((entry) => {
    const lines = [
      `BackendTLSPolicy ${entry.policyNamespace}/${entry.policyName}: ${describePortScope(entry)}`,
      `${STEP}hostname: ${entry.hostname} (SNI${entry.subjectAltNames.length === 0 ? " and verified name" : ""})`,
      `${STEP}trust: ${describeTrust(entry)}`,
    ];
    const sans = describeSubjectAltNames(entry);
    if (sans !== "") lines.push(`${STEP}subject alt names: ${sans}`);
    const options = entry.options.map((o) => `${o.key}=${o.value}`).join(", ");
    if (options !== "") lines.push(`${STEP}options: ${options}`);
    return lines;
  });
}
