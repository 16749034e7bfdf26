/**
 * Reads one VirtualHost (`mesh.aether.dev/v1alpha1`, aether's own kind): the
 * extra host names under which a Service of its namespace is reachable, in
 * the spirit of an Envoy virtual host's `domains`. Its shape:
 *
 *     spec:
 *       targetRef: { group: "", kind: Service, name: users, sectionName: http }
 *       hostnames: [users.example.com, "*.users.example.com"]
 *
 * Invalid input throws a FieldError naming the field path. Pure, no I/O.
 */
import { type KubeObject, MESH_API_GROUP } from "./kube-object.js";
import {
  asObject,
  checkFields,
  fail,
  field,
  groupKind,
  type JsonObject,
  optionalList,
  quote,
  readCreationNanos,
  readTargetRef,
} from "./projector-fields.js";
import { compareStrings, type ObjectType } from "./projector-index.js";
import { isRouteHostname } from "./projector-syntax.js";

/** `VirtualHost` in `mesh.aether.dev` (v1alpha1). */
export const VIRTUAL_HOST: ObjectType = { group: MESH_API_GROUP, kind: "VirtualHost" };

/** The most host names one VirtualHost may list (as its CRD allows). */
const MAX_VIRTUAL_HOSTNAMES = 16;

/** A valid VirtualHost, read, not yet resolved against its Service. */
export interface ReadVirtualHost {
  /** Its namespace. */
  readonly namespace: string;
  /** Its name. */
  readonly name: string;
  /** Its creation time in nanoseconds since the epoch; undefined when it has none (newest). */
  readonly created: bigint | undefined;
  /** The targeted Service's name, in the VirtualHost's namespace. */
  readonly service: string;
  /** The targetRef's sectionName (a named Service port); `""` for every port. */
  readonly sectionName: string;
  /** The host names, sorted, each once. */
  readonly hostnames: readonly string[];
}

/** Digits and dots only: an IPv4 address, which is not a host name here. */
const IPV4_LIKE = /^[0-9.]+$/;

/**
 * Reads and validates `object`, a VirtualHost with a usable namespace and
 * name. Throws a FieldError with reason `invalid_object` (wrong type, missing
 * field, no hostnames), `unsupported_field` (an unknown field), `invalid_kind`
 * (a targetRef to anything but a core Service) or `invalid_value` (a host
 * name that is not an RFC 1123 DNS name with an optional `*.` prefix, in lower
 * case, with labels of at most 63 characters, or is an IPv4 address; a host
 * name listed twice; too many).
 */
export function readVirtualHost(object: KubeObject): ReadVirtualHost {
  const metadata = asObject(object.metadata, "metadata");
  const spec = asObject(object.spec, "spec");
  checkFields(spec, "spec", { supported: ["targetRef", "hostnames"] });
  const path = "spec.targetRef";
  const ref = readTargetRef(field(spec, "targetRef"), path, 0);
  if (ref.group !== "" || ref.kind !== "Service") {
    fail(
      "invalid_kind",
      `${path} names a ${quote(groupKind(ref.group, ref.kind))}; a VirtualHost targets a core Service`,
    );
  }
  return {
    namespace: metadata.namespace as string,
    name: metadata.name as string,
    created: readCreationNanos(metadata),
    service: ref.name,
    sectionName: ref.sectionName ?? "",
    hostnames: readHostnames(spec),
  };
}

function readHostnames(spec: JsonObject): string[] {
  const list = optionalList(spec, "hostnames", "spec", MAX_VIRTUAL_HOSTNAMES);
  if (list.length === 0) fail("invalid_object", "spec.hostnames must list at least one host name");
  const seen = new Set<string>();
  list.forEach((raw, i) => {
    const path = `spec.hostnames[${i}]`;
    if (typeof raw !== "string") fail("invalid_object", `${path} must be a string`);
    const longLabel = raw.split(".").some((label) => label.length > 63);
    if (!isRouteHostname(raw) || IPV4_LIKE.test(raw) || longLabel) {
      fail(
        "invalid_value",
        `${path} ${quote(raw)} is not a lower-case RFC 1123 host name (an optional "*." prefix, no IP address)`,
      );
    }
    if (seen.has(raw)) fail("invalid_value", `${path} ${quote(raw)} is listed twice`);
    seen.add(raw);
  });
  return [...seen].sort(compareStrings);
}
