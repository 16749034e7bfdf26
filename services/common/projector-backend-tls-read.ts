/**
 * Reads one BackendTLSPolicy (`gateway.networking.k8s.io/v1`, GA since
 * Gateway API v1.4) and validates it as its CRD does: its targetRefs, and its
 * validation settings resolved to what a proxy needs (the `ca.crt` PEM text of
 * each referenced ConfigMap, or the well-known `System` CAs). Invalid input
 * throws a FieldError naming the field path. Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import {
  type BackendTlsOption,
  BackendTlsOptionSchema,
  type SubjectAltName,
  SubjectAltNameSchema,
  WellKnownCaCertificates,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import {
  asObject,
  checkFields,
  describeType,
  fail,
  field,
  groupKind,
  type JsonObject,
  optionalList,
  optionalString,
  quote,
  readCreationNanos,
  readTargetRef,
  requiredString,
  type TargetRef,
} from "./projector-fields.js";
import { CONFIG_MAP, type ObjectIndex } from "./projector-index.js";
import { isDnsSubdomain, isRouteHostname } from "./projector-syntax.js";

/** A valid BackendTLSPolicy, read and resolved, not yet attached to a port. */
export interface ReadBackendTlsPolicy {
  /** The policy's namespace. */
  readonly namespace: string;
  /** The policy's name. */
  readonly name: string;
  /** Its creation time in nanoseconds since the epoch; undefined when it has none (newest). */
  readonly created: bigint | undefined;
  /** Its targetRefs, in object order. */
  readonly targets: readonly TargetRef[];
  /** The SNI hostname. */
  readonly hostname: string;
  /** The referenced ConfigMaps' `ca.crt` values as one bundle; `""` with well-known CAs. */
  readonly caCertificatesPem: string;
  /** The well-known CAs, or UNSPECIFIED when `caCertificatesPem` is set. */
  readonly wellKnownCaCertificates: WellKnownCaCertificates;
  /** The subjectAltNames, in object order. */
  readonly subjectAltNames: readonly SubjectAltName[];
  /** `spec.options`, sorted by key. */
  readonly options: readonly BackendTlsOption[];
}

/** The most targetRefs, caCertificateRefs, subjectAltNames and options the CRD allows. */
const MAX_TARGET_REFS = 16;
const MAX_CA_REFS = 8;
const MAX_SANS = 5;
const MAX_OPTIONS = 16;
/** An absolute URI: a scheme, a colon, and a scheme-specific part. */
const ABSOLUTE_URI = /^[A-Za-z][A-Za-z0-9+.-]*:[^\s]+$/;
const IPV4_LIKE = /^[0-9.]+$/;
const PEM_CERTIFICATE = "-----BEGIN CERTIFICATE-----";

/**
 * Reads and validates `object`, a BackendTLSPolicy with a usable namespace
 * and name, resolving its caCertificateRefs against ConfigMaps of its own
 * namespace in `index`. Throws a FieldError with reason `invalid_object`
 * (wrong type, missing field), `unsupported_field` (an unknown field),
 * `invalid_value` (a bad hostname, subjectAltName or option, both or neither
 * of caCertificateRefs and wellKnownCACertificates, an unknown well-known
 * set, targetRefs that are not distinct), `invalid_kind` (a CA reference to
 * anything but a core ConfigMap) or `invalid_ca_certificate_ref` (a missing
 * ConfigMap, or one without a PEM certificate under `ca.crt`).
 */
export function readBackendTlsPolicy(object: KubeObject, index: ObjectIndex): ReadBackendTlsPolicy {
  const metadata = asObject(object.metadata, "metadata");
  const namespace = metadata.namespace as string;
  const name = metadata.name as string;
  const spec = asObject(object.spec, "spec");
  checkFields(spec, "spec", { supported: ["targetRefs", "validation", "options"] });
  const targets = readTargets(spec);
  const validation = asObject(field(spec, "validation"), "spec.validation");
  const path = "spec.validation";
  checkFields(validation, path, {
    supported: ["caCertificateRefs", "wellKnownCACertificates", "hostname", "subjectAltNames"],
  });
  const hostname = requiredString(validation, "hostname", path, { min: 1, max: 253 });
  if (!isDnsSubdomain(hostname) || IPV4_LIKE.test(hostname)) {
    fail(
      "invalid_value",
      `${path}.hostname ${quote(hostname)} is not a DNS name (no wildcard, no IP address)`,
    );
  }
  const trust = readTrust(validation, namespace, index);
  return {
    namespace,
    name,
    created: readCreationNanos(metadata),
    targets,
    hostname,
    ...trust,
    subjectAltNames: readSubjectAltNames(validation),
    options: readOptions(spec),
  };
}

function readTargets(spec: JsonObject): TargetRef[] {
  const list = optionalList(spec, "targetRefs", "spec", MAX_TARGET_REFS);
  if (list.length === 0) fail("invalid_object", "spec.targetRefs must name at least one target");
  const seen = new Set<string>();
  return list.map((raw, i) => {
    const path = `spec.targetRefs[${i}]`;
    const target = readTargetRef(raw, path, i);
    const identity = `${target.group}/${target.kind}/${target.name}/${target.sectionName ?? ""}`;
    if (seen.has(identity)) {
      fail(
        "invalid_value",
        `${path} names the same target and sectionName as an earlier targetRef`,
      );
    }
    seen.add(identity);
    return target;
  });
}

function readTrust(
  validation: JsonObject,
  namespace: string,
  index: ObjectIndex,
): { caCertificatesPem: string; wellKnownCaCertificates: WellKnownCaCertificates } {
  const path = "spec.validation";
  const refs = optionalList(validation, "caCertificateRefs", path, MAX_CA_REFS);
  const wellKnown = optionalString(validation, "wellKnownCACertificates", path) ?? "";
  if (refs.length > 0 && wellKnown !== "") {
    fail(
      "invalid_value",
      `${path} sets both caCertificateRefs and wellKnownCACertificates; set one`,
    );
  }
  if (refs.length === 0 && wellKnown === "") {
    fail(
      "invalid_value",
      `${path} sets neither caCertificateRefs nor wellKnownCACertificates; set one`,
    );
  }
  if (wellKnown !== "") {
    if (wellKnown !== "System") {
      fail(
        "invalid_value",
        `${path}.wellKnownCACertificates is ${quote(wellKnown)}; it must be System`,
      );
    }
    return { caCertificatesPem: "", wellKnownCaCertificates: WellKnownCaCertificates.SYSTEM };
  }
  const bundle = refs.map((raw, i) =>
    caCertificate(raw, `${path}.caCertificateRefs[${i}]`, namespace, index),
  );
  return {
    caCertificatesPem: bundle.join(""),
    wellKnownCaCertificates: WellKnownCaCertificates.UNSPECIFIED,
  };
}

/** The `ca.crt` text of the ConfigMap a caCertificateRef names, ending in a newline. */
function caCertificate(raw: unknown, path: string, namespace: string, index: ObjectIndex): string {
  const ref = asObject(raw, path);
  checkFields(ref, path, { supported: ["group", "kind", "name"] });
  const group = requiredString(ref, "group", path, { max: 253 });
  const kind = requiredString(ref, "kind", path, { min: 1, max: 63 });
  const name = requiredString(ref, "name", path, { min: 1, max: 253 });
  if (group !== "" || kind !== "ConfigMap") {
    fail(
      "invalid_kind",
      `${path} names a ${quote(groupKind(group, kind))}; only a core ConfigMap can hold the CA certificates`,
    );
  }
  const configMap = index.get(CONFIG_MAP, namespace, name);
  if (configMap === undefined) {
    fail(
      "invalid_ca_certificate_ref",
      `${path} names ConfigMap ${namespace}/${name}, which does not exist`,
    );
  }
  const data = (configMap as JsonObject).data;
  const text =
    typeof data === "object" && data !== null ? field(data as JsonObject, "ca.crt") : undefined;
  if (typeof text !== "string" || !text.includes(PEM_CERTIFICATE)) {
    const what =
      typeof text === "string" ? "no PEM certificate" : `${describeType(text)}, not a PEM bundle,`;
    fail(
      "invalid_ca_certificate_ref",
      `${path} names ConfigMap ${namespace}/${name}, whose data key ca.crt holds ${text === undefined ? "nothing" : what}`,
    );
  }
  return text.endsWith("\n") ? text : `${text}\n`;
}

function readSubjectAltNames(validation: JsonObject): SubjectAltName[] {
  const list = optionalList(validation, "subjectAltNames", "spec.validation", MAX_SANS);
  return list.map((raw, i) => {
    const path = `spec.validation.subjectAltNames[${i}]`;
    const san = asObject(raw, path);
    checkFields(san, path, { supported: ["type", "hostname", "uri"] });
    const type = requiredString(san, "type", path);
    const hostname = optionalString(san, "hostname", path, { max: 253 }) ?? "";
    const uri = optionalString(san, "uri", path, { max: 253 }) ?? "";
    if (type === "Hostname" && uri === "" && isRouteHostname(hostname)) {
      return create(SubjectAltNameSchema, { name: { case: "hostname", value: hostname } });
    }
    if (type === "URI" && hostname === "" && ABSOLUTE_URI.test(uri)) {
      return create(SubjectAltNameSchema, { name: { case: "uri", value: uri } });
    }
    return fail("invalid_value", `${path} ${sanProblem(type, hostname, uri)}`);
  });
}

function sanProblem(type: string, hostname: string, uri: string): string {
  if (type !== "Hostname" && type !== "URI")
    return `has type ${quote(type)}; it must be Hostname or URI`;
  const [own, other] = type === "Hostname" ? [hostname, uri] : [uri, hostname];
  const otherKey = type === "Hostname" ? "uri" : "hostname";
  if (other !== "") return `of type ${type} must not set ${otherKey}`;
  if (own === "") return `of type ${type} must set ${type === "Hostname" ? "hostname" : "uri"}`;
  return type === "Hostname"
    ? `hostname ${quote(hostname)} is not a DNS name`
    : `uri ${quote(uri)} is not an absolute URI (a scheme and a scheme-specific part)`;
}

function readOptions(spec: JsonObject): BackendTlsOption[] {
  const raw = field(spec, "options");
  if (raw === undefined) return [];
  const options = asObject(raw, "spec.options");
  const keys = Object.keys(options).sort();
  if (keys.length > MAX_OPTIONS) {
    fail(
      "invalid_value",
      `spec.options has ${keys.length} entries; at most ${MAX_OPTIONS} are allowed`,
    );
  }
  return keys.map((key) => {
    const value = requiredString(options, key, "spec.options", { max: 4096 });
    if (key === "" || key.length > 253) {
      fail("invalid_value", `spec.options key ${quote(key)} must be 1 to 253 characters long`);
    }
    return create(BackendTlsOptionSchema, { key, value });
  });
}
