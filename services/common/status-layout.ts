/**
 * Where a cluster's published import status lives in the shared store (see
 * DESIGN.md "Fleet status"): under its own origin subtree, beside `config/`,
 * one directory per registrar replica:
 *
 * - `<prefix>/clusters/<cluster>/status/<replica>/replica`: the replica's
 *   header (`ImportStatusReplica`: heartbeat, agent totals);
 * - `<prefix>/clusters/<cluster>/status/<replica>/services/<base64url(service)>`:
 *   one `ServiceImportStatus` per service.
 *
 * Written only by that cluster's registrars (its etcd role grants exactly the
 * origin subtree). Pure: no Buffer, so a browser bundle can use it too.
 */
import { originSubtreePrefix } from "./store-layout.js";

/** The key prefix of every replica's status of one cluster: `<prefix>/clusters/<cluster>/status/`. */
export function clusterStatusPrefix(prefix: string, cluster: string): string {
  return `${originSubtreePrefix(prefix, cluster)}status/`;
}

/** The key prefix of one replica's status: `<prefix>/clusters/<cluster>/status/<replica>/`. */
export function replicaStatusPrefix(prefix: string, cluster: string, replica: string): string {
  return `${clusterStatusPrefix(prefix, cluster)}${replica}/`;
}

/** The key of one replica's header (`ImportStatusReplica`). */
export function replicaHeaderKey(prefix: string, cluster: string, replica: string): string {
  return `${replicaStatusPrefix(prefix, cluster, replica)}replica`;
}

/** The key of one replica's status of one service (`ServiceImportStatus`). */
export function serviceStatusKey(
  prefix: string,
  cluster: string,
  replica: string,
  service: string,
): string {
  return `${replicaStatusPrefix(prefix, cluster, replica)}services/${encodeSegment(service)}`;
}

/** What a status key names. */
export type StatusKey =
  | { readonly kind: "replica"; readonly cluster: string; readonly replica: string }
  | {
      readonly kind: "service";
      readonly cluster: string;
      readonly replica: string;
      readonly service: string;
    };

/**
 * Parses a key under `<prefix>/clusters/`; undefined for anything that is not
 * a well-formed status key (a projection key, an election key, a replica name
 * that {@link checkReplicaName} refuses, a service segment that is not
 * canonical base64url), so readers skip it rather than trust it.
 */
export function parseStatusKey(prefix: string, key: string): StatusKey | undefined {
  const base = `${prefix}/clusters/`;
  if (!key.startsWith(base)) return undefined;
  const parts = key.slice(base.length).split("/");
  const [cluster, status, replica, leaf, segment] = parts;
  if (cluster === undefined || cluster === "" || status !== "status") return undefined;
  if (replica === undefined || checkReplicaName(replica) !== undefined) return undefined;
  if (parts.length === 4 && leaf === "replica") return { kind: "replica", cluster, replica };
  if (parts.length !== 5 || leaf !== "services" || segment === undefined) return undefined;
  const service = decodeSegment(segment);
  if (service === undefined) return undefined;
  return { kind: "service", cluster, replica, service };
}

const REPLICA = /^[a-z0-9]([a-z0-9.-]{0,61}[a-z0-9])?$/;

/**
 * Checks a replica name (`--replica-id`): 1 to 63 characters of `[a-z0-9.-]`,
 * starting and ending with a letter or digit (a DNS label, dots allowed, like
 * a pod or host name). Returns why it is not one, or undefined when it is.
 */
export function checkReplicaName(name: string): string | undefined {
  if (REPLICA.test(name)) return undefined;
  return `replica name ${JSON.stringify(name)} must be 1 to 63 characters of [a-z0-9.-], starting and ending with a letter or digit`;
}

/**
 * Turns a host name into a replica name: lowercased, characters outside
 * `[a-z0-9.-]` replaced by `-`, cut to 63, trimmed of leading and trailing
 * `-`/`.`; `registrar` when nothing is left.
 */
export function replicaNameFromHost(host: string): string {
  const name = host
    .toLowerCase()
    .replace(/[^a-z0-9.-]/g, "-")
    .slice(0, 63)
    .replace(/^[.-]+|[.-]+$/g, "");
  return name === "" ? "registrar" : name;
}

/** base64url without padding of the UTF-8 bytes of `text`. */
function encodeSegment(text: string): string {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

/** The text of a canonical base64url segment; undefined for anything else. */
function decodeSegment(segment: string): string | undefined {
  if (!/^[A-Za-z0-9_-]+$/.test(segment)) return undefined;
  let binary: string;
  try {
    binary = atob(segment.replace(/-/g, "+").replace(/_/g, "/"));
  } catch {
    return undefined;
  }
  const bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0));
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    return undefined;
  }
  return encodeSegment(text) === segment ? text : undefined;
}
