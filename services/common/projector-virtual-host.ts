/**
 * VirtualHost on the projection: each valid VirtualHost attached to the
 * Service its targetRef names. A host name belongs to one Service of the
 * cluster: VirtualHosts are decided oldest first (then by namespace/name),
 * and one claiming a host name an earlier accepted VirtualHost holds for a
 * different Service is `conflicted` as a whole (never half carried). Claims
 * are decided over every resolvable VirtualHost whatever the projection's
 * scope, so the exporter and an agent's local routes agree on the winner.
 * Pure and deterministic, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { type VirtualHost, VirtualHostSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import type { PolicyProblem } from "./projector-backend-tls.js";
import { FieldError, field, isJsonObject } from "./projector-fields.js";
import {
  compareOldestFirst,
  compareStrings,
  getOrCreate,
  type ObjectIndex,
  whyOlderWins,
} from "./projector-index.js";
import {
  type ReadVirtualHost,
  readVirtualHost,
  VIRTUAL_HOST,
} from "./projector-virtual-host-read.js";

/** What {@link attachVirtualHosts} gives. */
export interface VirtualHostAttachment {
  /** The entries of each in-scope service, sorted by port, section name, namespace, name. */
  readonly entries: Map<string, VirtualHost[]>;
  /** VirtualHosts left out, for in-scope or missing targets only. */
  readonly rejections: PolicyProblem[];
}

interface Resolved {
  readonly host: ReadVirtualHost;
  /** `namespace/name` of the target Service. */
  readonly service: string;
  readonly port: number;
}

/**
 * Attaches the VirtualHosts of `index` to the services `inScope` accepts.
 * Rejections: whatever {@link readVirtualHost} throws, `invalid_object` (no
 * usable metadata), `duplicate_object`, `unknown_target` (no such Service, or
 * no port of that sectionName) and `conflicted` (an older VirtualHost, or one
 * first by namespace/name, holds one of its host names for another Service).
 * A VirtualHost whose Service exists but is out of scope is not reported.
 * Never throws.
 */
export function attachVirtualHosts(
  index: ObjectIndex,
  inScope: (key: string) => boolean,
): VirtualHostAttachment {
  const rejections: PolicyProblem[] = [];
  const reject = (object: KubeObject, reason: string, message: string, service?: string): void => {
    if (
      service !== undefined &&
      index.service(...split(service)) !== undefined &&
      !inScope(service)
    )
      return;
    const services = service !== undefined && inScope(service) ? [service] : [];
    rejections.push({ ...identity(object), reason, message, services });
  };
  for (const object of index.unidentified(VIRTUAL_HOST)) {
    reject(
      object,
      "invalid_object",
      "the object has no usable metadata.namespace and metadata.name",
    );
  }
  const resolved: Resolved[] = [];
  for (const object of index.list(VIRTUAL_HOST)) {
    const { namespace, name } = identity(object);
    const target = targetOf(object);
    if (index.isAmbiguous(VIRTUAL_HOST, namespace, name)) {
      const message = `the snapshot holds several different VirtualHost objects named ${namespace}/${name}`;
      reject(object, "duplicate_object", message, target);
      continue;
    }
    let host: ReadVirtualHost;
    try {
      host = readVirtualHost(object);
    } catch (error) {
      const reason = error instanceof FieldError ? error.reason : "invalid_object";
      const message = error instanceof Error ? error.message : String(error);
      reject(object, reason, message, target);
      continue;
    }
    const key = `${namespace}/${host.service}`;
    const service = index.service(namespace, host.service);
    if (service === undefined) {
      reject(object, "unknown_target", `spec.targetRef names Service ${key}, which does not exist`);
      continue;
    }
    const port =
      host.sectionName === "" ? undefined : service.ports.find((p) => p.name === host.sectionName);
    if (host.sectionName !== "" && port === undefined) {
      const message = `spec.targetRef names sectionName ${JSON.stringify(host.sectionName)} of Service ${key}, which has no port of that name`;
      reject(object, "unknown_target", message, key);
      continue;
    }
    resolved.push({ host, service: key, port: port?.port ?? 0 });
  }
  const entries = new Map<string, VirtualHost[]>();
  const claims = new Map<string, Resolved>();
  for (const candidate of resolved.sort((a, b) => compareOldestFirst(a.host, b.host))) {
    const taken = candidate.host.hostnames.find((h) => {
      const holder = claims.get(h);
      return holder !== undefined && holder.service !== candidate.service;
    });
    if (taken !== undefined) {
      const holder = claims.get(taken) as Resolved;
      const why = whyOlderWins(holder.host, candidate.host);
      const message = `spec.hostnames claims ${JSON.stringify(taken)}, which VirtualHost ${holder.host.namespace}/${holder.host.name} holds for Service ${holder.service} (it ${why})`;
      const { namespace, name } = candidate.host;
      if (inScope(candidate.service)) {
        rejections.push({
          namespace,
          name,
          reason: "conflicted",
          message,
          services: [candidate.service],
        });
      }
      continue;
    }
    for (const h of candidate.host.hostnames) if (!claims.has(h)) claims.set(h, candidate);
    if (!inScope(candidate.service)) continue;
    getOrCreate(entries, candidate.service, () => []).push(entryOf(candidate));
  }
  for (const list of entries.values()) list.sort(compareEntries);
  return { entries, rejections };
}

function compareEntries(a: VirtualHost, b: VirtualHost): number {
  return (
    a.port - b.port ||
    compareStrings(a.sectionName, b.sectionName) ||
    compareStrings(a.namespace, b.namespace) ||
    compareStrings(a.name, b.name)
  );
}

function entryOf(candidate: Resolved): VirtualHost {
  const { host } = candidate;
  return create(VirtualHostSchema, {
    port: candidate.port,
    sectionName: host.sectionName,
    hostnames: [...host.hostnames],
    namespace: host.namespace,
    name: host.name,
  });
}

/** The `namespace/name` of the Service an identified VirtualHost names, read leniently. */
function targetOf(object: KubeObject): string | undefined {
  const spec: unknown = object.spec;
  const ref = isJsonObject(spec) ? field(spec, "targetRef") : undefined;
  const name = isJsonObject(ref) ? field(ref, "name") : undefined;
  return typeof name === "string" ? `${identity(object).namespace}/${name}` : undefined;
}

function split(key: string): [string, string] {
  const slash = key.indexOf("/");
  return [key.slice(0, slash), key.slice(slash + 1)];
}

function identity(object: KubeObject): { namespace: string; name: string } {
  const metadata: unknown = isJsonObject(object) ? object.metadata : undefined;
  const read = (key: string): string => {
    const value = isJsonObject(metadata) ? field(metadata, key) : undefined;
    return typeof value === "string" ? value : "";
  };
  return { namespace: read("namespace"), name: read("name") };
}
