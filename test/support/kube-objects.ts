/** Builders of small Kubernetes objects for projector tests. */
import type { KubeObject } from "../../services/common/kube-object.js";

/** One named port of a Service. */
export interface ServicePort {
  /** The port's name (what a sectionName names). */
  readonly name: string;
  /** The port number. */
  readonly port: number;
  /** Its appProtocol, when it has one. */
  readonly appProtocol?: string;
}

/** A core Service `namespace/name` with `ports` (and `extra` spec fields). */
export function kubeService(
  name: string,
  namespace: string,
  ports: readonly ServicePort[],
  extra: object = {},
): KubeObject {
  return {
    apiVersion: "v1",
    kind: "Service",
    metadata: { namespace, name },
    spec: { ports, ...extra },
  };
}

/** A ServiceExport (`multicluster.x-k8s.io/v1alpha1`) of `namespace/name`. */
export function serviceExport(name: string, namespace: string): KubeObject {
  return {
    apiVersion: "multicluster.x-k8s.io/v1alpha1",
    kind: "ServiceExport",
    metadata: { namespace, name },
  };
}

/**
 * An HTTPRoute `namespace/name` attached to the Service `service` (port 80)
 * whose one rule runs the ExtensionRef filter `ruleRef`, and whose backend
 * (the Service itself) runs `backendRef` when given.
 */
export function extensionRefRoute(
  namespace: string,
  name: string,
  service: string,
  ruleRef: object,
  backendRef?: object,
): KubeObject {
  const filters = (ref: object) => [{ type: "ExtensionRef", extensionRef: ref }];
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { namespace, name },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name: service }],
      rules: [
        {
          filters: filters(ruleRef),
          backendRefs: [
            {
              name: service,
              port: 80,
              ...(backendRef === undefined ? {} : { filters: filters(backendRef) }),
            },
          ],
        },
      ],
    },
  };
}
