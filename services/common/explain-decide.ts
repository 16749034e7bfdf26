/**
 * One explain decision over a whole view held in memory (every projection
 * of the effective view, or of one origin, as ListAllConfig/ListConfig give
 * them): what `aetherctl explain` does with its fetches, for the console,
 * which lists the view once. The target's VirtualHost name is looked up
 * (`serviceForHost`), the destination's projection and the mesh record
 * (`@mesh`) are taken from the view, the shared evaluator decides, and the
 * HTTP filters of the port and the chosen backend's TLS come with it. Pure.
 */
import type {
  BackendTls,
  HttpFilter,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { backendTlsFor } from "./backend-tls-select.js";
import { evaluate } from "./evaluator.js";
import type { Decision } from "./evaluator-types.js";
import { ExplainInputError, type ExplainTarget } from "./explain-target.js";
import { httpFiltersForPort } from "./http-filter-selection.js";
import { MESH_RECORD } from "./service-name.js";
import { serviceForHost } from "./virtual-host-select.js";

/** An explained request: the resolved target, what decided it and the decision. */
export interface Explanation {
  /** The target, with its service (and `virtualHost`) once a VirtualHost name was looked up. */
  readonly target: ExplainTarget;
  /** The destination's projection in the view; undefined when the view has none. */
  readonly projection: ServiceConfigProjection | undefined;
  /** The mesh record (`@mesh`) of the view, when it carries a MeshConfig. */
  readonly meshRecord: ServiceConfigProjection | undefined;
  /** The evaluator's decision. */
  readonly decision: Decision;
  /** The destination's HTTP filters that run for the request's port, in order. */
  readonly httpFilters: readonly HttpFilter[];
  /** The TLS the caller's proxy uses to the chosen backend; undefined: plaintext or no backend. */
  readonly backendTls: BackendTls | undefined;
}

/**
 * The target with its service: as given, or the service whose VirtualHost
 * names match its host; an {@link ExplainInputError} (aetherctl's message)
 * when none does.
 */
export function resolveTargetService(
  target: ExplainTarget,
  projections: readonly ServiceConfigProjection[],
): ExplainTarget {
  const name = target.virtualHostName;
  if (name === undefined) return target;
  const match = serviceForHost(projections, name, target.port);
  if (match === undefined) {
    throw new ExplainInputError(
      `cannot tell the service from host ${JSON.stringify(name)}: it is not a service's DNS name (name, name.namespace, name.namespace.svc or name.namespace.svc.cluster.local) and no VirtualHost names it for port ${target.port}`,
      "url",
    );
  }
  const { namespace, name: object } = match.virtualHost;
  return {
    ...target,
    service: match.service,
    virtualHost: { hostname: match.hostname, virtualHost: `${namespace}/${object}` },
  };
}

/**
 * Explains `target` against `projections` (one view, all of it) with the
 * random source `random` (see `EvaluateInput.random`), as `aetherctl
 * explain` does against the same view. Throws an {@link ExplainInputError}
 * when the target's host names no service.
 */
export function explainInView(
  target: ExplainTarget,
  projections: readonly ServiceConfigProjection[],
  random: () => number,
): Explanation {
  const resolved = resolveTargetService(target, projections);
  const find = (service: string) => projections.find((p) => p.service === service);
  const projection = find(resolved.service);
  const mesh = find(MESH_RECORD);
  const meshRecord = mesh?.meshConfig === undefined ? undefined : mesh;
  const decision = evaluate({
    projections: projection === undefined ? [] : [projection],
    request: resolved.request,
    mesh: {
      service: resolved.service,
      port: resolved.port,
      callerNamespace: resolved.callerNamespace,
      ...(resolved.portName === undefined ? {} : { portName: resolved.portName }),
    },
    random,
    meshDefaults: meshRecord?.meshConfig,
  });
  const backend = decision.backend;
  const backendProjection =
    backend !== undefined && backend.service !== resolved.service && backend.service !== ""
      ? find(backend.service)
      : projection;
  return {
    target: resolved,
    projection,
    meshRecord,
    decision,
    httpFilters: httpFiltersForPort(projection, resolved.port),
    backendTls: backend === undefined ? undefined : backendTlsFor(backendProjection, backend.port),
  };
}
