/**
 * The mesh-profile (GAMMA) harness: it resolves the authority a client pod
 * dials (`svc`, `svc:port`, `svc.namespace`, or a pod IP) to the destination
 * Service and port, projects every Service that has routes with
 * `projectServices`, and evaluates the destination's projection with the
 * caller's namespace. A pod IP reaches that pod without any route.
 */
import type { ServiceConfigProjection } from "../../gen/aether/registry/v1/projection_pb.js";
import { type EvaluatorRequest, evaluate } from "../../services/common/evaluator.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { type ProjectorOutput, projectServices } from "../../services/common/projector.js";
import type { MeshRequest } from "./corpus.js";
import type { Runner } from "./expectations.js";
import { type Observed, observeDecision, observeDirect } from "./observed.js";

/** The gRPC call the mesh echo client makes (the routes under test do not match on it). */
export const MESH_GRPC_CALL = {
  service: "gateway_api_conformance.echo_basic.grpcecho.GrpcEcho",
  method: "Echo",
};

const POD_IP = /^<pod IP of a ([^/]+)\/(\S+) pod>(?::(\d+))?$/;

/** A resolved mesh destination. */
export interface MeshTarget {
  /** The Service, as `namespace/name`. */
  readonly service: string;
  /** The Service port dialled. */
  readonly port: number;
  /** The name of that port, when the Service names it. */
  readonly portName: string | undefined;
}

/**
 * Resolves an authority the way cluster DNS and kube-proxy would for a pod in
 * `callerNamespace`: `name[.namespace][:port]`, port 80 by default. Throws
 * when no such Service (or port) exists.
 */
export function resolveService(
  objects: readonly KubeObject[],
  authority: string,
  callerNamespace: string,
): MeshTarget {
  const [hostPart, portPart] = authority.split(":") as [string, string | undefined];
  const [name, namespace = callerNamespace] = hostPart.split(".") as [string, string | undefined];
  const port = portPart === undefined ? 80 : Number(portPart);
  const service = objects.find(
    (o) => o.kind === "Service" && o.metadata?.namespace === namespace && o.metadata?.name === name,
  );
  if (service === undefined) throw new Error(`no Service ${namespace}/${name} for ${authority}`);
  const ports = (service.spec as { ports?: { name?: string; port: number }[] }).ports ?? [];
  const servicePort = ports.find((p) => p.port === port);
  if (servicePort === undefined)
    throw new Error(`Service ${namespace}/${name} has no port ${port}`);
  return { service: `${namespace}/${name}`, port, portName: servicePort.name };
}

/**
 * Builds the runner of a mesh-profile request. `projected` is the projector's
 * output for the same objects (every Service with routes).
 */
export function meshRunner(
  objects: readonly KubeObject[],
  projected: ProjectorOutput,
  request: MeshRequest,
): Runner {
  const hostHeader = request.headers?.Host ?? request.headers?.host ?? request.host;
  const path = request.path ?? "/";
  const pod = POD_IP.exec(request.host);
  if (pod !== null) {
    const observed = observeDirect(
      { workloads: [pod[2] as string], namespace: pod[1] as string },
      request.headers,
      { path, host: hostHeader },
    );
    return () => observed;
  }
  const target = resolveService(objects, request.host, request.from.namespace);
  const projections: ServiceConfigProjection[] = projected.projections.filter(
    (p) => p.service === target.service,
  );
  const evaluatorRequest: EvaluatorRequest =
    request.protocol === "grpc"
      ? {
          kind: "grpc",
          authority: request.host,
          port: target.port,
          ...MESH_GRPC_CALL,
          metadata: request.headers,
        }
      : {
          kind: "http",
          method: request.method ?? "GET",
          host: hostHeader,
          port: target.port,
          path,
          headers: request.headers,
        };
  const mesh = { ...target, callerNamespace: request.from.namespace };
  return (random): Observed => {
    const decision = evaluate({ projections, mesh, request: evaluatorRequest, random });
    return observeDecision(decision, objects, undefined);
  };
}

/** Projects a mesh object set: every Service a route attaches to. */
export function projectMesh(objects: readonly KubeObject[]): ProjectorOutput {
  return projectServices(objects, { exportAll: true });
}
