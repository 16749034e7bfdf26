/**
 * What the incremental projector keeps about VirtualHosts. A VirtualHost's
 * host names are decided against every other VirtualHost of the snapshot
 * (the oldest claim wins across Services), so the incremental projector
 * does not track them precisely: any VirtualHost edit, and any edit of a
 * Service or ServiceExport a VirtualHost names, and any re-projection that
 * brings such a Service into scope or out of it, falls back to a full
 * projection; every other re-projection takes all VirtualHosts and the
 * Services they name along, so the claims come out as in a full one. Pure.
 */
import { apiGroupOf, type KubeObject } from "./kube-object.js";
import { field, isJsonObject } from "./projector-fields.js";
import { VIRTUAL_HOST } from "./projector-virtual-host-read.js";

/** The VirtualHosts of the last indexed snapshot; see the module comment. */
export interface VirtualHostTracker {
  /** Remembers `object` when it is a VirtualHost; reports whether it was. */
  index(object: KubeObject): boolean;
  /** Forgets every VirtualHost (before indexing a new snapshot). */
  reset(): void;
  /** Whether `object` is a VirtualHost, with or without a usable identity. */
  isVirtualHost(object: KubeObject): boolean;
  /** Whether a VirtualHost names the Service `namespace/name` as its target. */
  targets(service: string): boolean;
  /** Every VirtualHost remembered. */
  readonly objects: ReadonlySet<KubeObject>;
  /** The Services (`namespace/name`) they name, existing or not. */
  readonly services: ReadonlySet<string>;
}

/** Creates an empty {@link VirtualHostTracker}. */
export function createVirtualHostTracker(): VirtualHostTracker {
  const objects = new Set<KubeObject>();
  const services = new Set<string>();
  const isVirtualHost = (object: KubeObject): boolean => {
    if (!isJsonObject(object)) return false;
    const { apiVersion, kind } = object;
    return (
      typeof apiVersion === "string" &&
      kind === VIRTUAL_HOST.kind &&
      apiGroupOf(apiVersion) === VIRTUAL_HOST.group
    );
  };
  return {
    objects,
    services,
    isVirtualHost,
    targets: (service) => services.has(service),
    reset() {
      objects.clear();
      services.clear();
    },
    index(object) {
      if (!isVirtualHost(object)) return false;
      objects.add(object);
      const target = targetOf(object);
      if (target !== undefined) services.add(target);
      return true;
    },
  };
}

/** The `namespace/name` its targetRef names, read leniently. */
function targetOf(object: KubeObject): string | undefined {
  const metadata: unknown = object.metadata;
  const namespace = isJsonObject(metadata) ? field(metadata, "namespace") : undefined;
  const spec: unknown = object.spec;
  const ref = isJsonObject(spec) ? field(spec, "targetRef") : undefined;
  const name = isJsonObject(ref) ? field(ref, "name") : undefined;
  if (typeof namespace !== "string" || typeof name !== "string") return undefined;
  return `${namespace}/${name}`;
}
