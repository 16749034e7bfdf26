/**
 * Validation of the names the channel is keyed by: services as
 * `namespace/name` and cluster names. Pure, no I/O.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** The maximum length of a DNS-1123 label. */
export const MAX_LABEL_LENGTH = 63;

/** Reports whether `value` is a DNS-1123 label (lower-case alphanumerics and `-`, at most 63). */
export function isDns1123Label(value: string): boolean {
  return value.length <= MAX_LABEL_LENGTH && DNS1123_LABEL.test(value);
}

/**
 * Checks a service key. Returns undefined when `value` is `namespace/name` with
 * both parts DNS-1123 labels, and otherwise a sentence saying what is wrong,
 * suitable for an InvalidArgument error message.
 */
export function checkServiceName(value: string): string | undefined {
  if (validNames.has(value)) return undefined;
  const problem = serviceNameProblem(value);
  if (problem === undefined) {
    if (validNames.size >= VALID_NAMES_REMEMBERED) validNames.clear();
    validNames.add(value);
  }
  return problem;
}

/** The most valid service names {@link checkServiceName} remembers (cleared when full). */
export const VALID_NAMES_REMEMBERED = 4096;

/**
 * Service names found valid lately: the agent checks the same few names on
 * every change it receives. Only valid names (at most 127 characters) are
 * kept, so the memory is bounded.
 */
const validNames = new Set<string>();

function serviceNameProblem(value: string): string | undefined {
  const parts = value.split("/");
  if (parts.length !== 2) {
    return `service ${JSON.stringify(value)} must be "namespace/name"`;
  }
  const [namespace, name] = parts as [string, string];
  if (!isDns1123Label(namespace)) {
    return `service ${JSON.stringify(value)}: namespace ${JSON.stringify(namespace)} is not a DNS-1123 label (lower-case letters, digits and "-", at most 63 characters)`;
  }
  if (!isDns1123Label(name)) {
    return `service ${JSON.stringify(value)}: name ${JSON.stringify(name)} is not a DNS-1123 label (lower-case letters, digits and "-", at most 63 characters)`;
  }
  return undefined;
}

/**
 * Checks a cluster (origin) name. Returns undefined when it is a DNS-1123
 * label, and otherwise a sentence saying what is wrong.
 */
export function checkClusterName(value: string): string | undefined {
  if (!isDns1123Label(value)) {
    return `cluster name ${JSON.stringify(value)} is not a DNS-1123 label (lower-case letters, digits and "-", at most 63 characters)`;
  }
  return undefined;
}

/**
 * The service key of an origin's mesh record: the projection that carries
 * its MeshConfig (`ServiceConfigProjection.mesh_config`) instead of a
 * service's config. No Service can have it (it is not `namespace/name`), so it
 * never collides with one; it is stored, watched, imported and cached like a
 * service key.
 */
export const MESH_RECORD = "@mesh";

/** Reports whether a projection key is the mesh record's. */
export function isMeshRecord(value: string): boolean {
  return value === MESH_RECORD;
}

/**
 * Checks a record key: a service key (see checkServiceName) or the mesh
 * record. Returns undefined when it is valid, otherwise a sentence saying
 * what is wrong.
 */
export function checkRecordName(value: string): string | undefined {
  return isMeshRecord(value) ? undefined : checkServiceName(value);
}
