/**
 * What a conformance client would observe for one request: the status, the
 * workload that served it, what that workload received and what the client
 * got back. The harnesses build it from an evaluator Decision (or from a
 * listener-level answer such as 421), and the expectation checks read it.
 */
import {
  applyHeaderChanges,
  type Decision,
  grpcStatusForHttp,
  type HeaderMap,
  normalizeHeaders,
} from "../../services/common/evaluator.js";
import type { KubeObject } from "../../services/common/kube-object.js";

/** The serving workload, as the upstream suite identifies it (by pod name prefix). */
export interface ServedBy {
  /** The Deployments whose pods the Service can pick (every one must match the expected prefix). */
  readonly workloads: readonly string[];
  /** The namespace of the serving pods. */
  readonly namespace: string;
}

/** One observed request. */
export interface Observed {
  /** The HTTP status. */
  readonly status: number;
  /** The gRPC status, for gRPC requests. */
  readonly grpcStatus: string | undefined;
  /** Who served the request; undefined when no backend was reached. */
  readonly servedBy: ServedBy | undefined;
  /** The request headers the backend received. */
  readonly requestHeaders: HeaderMap;
  /** The response headers the client received. */
  readonly responseHeaders: HeaderMap;
  /** The path (with query) and Host the backend received. */
  readonly forwarded: { readonly path: string; readonly host: string } | undefined;
  /** The Location of a redirect. */
  readonly location: string | undefined;
  /** The mirror copies of this request, as `namespace/name` of the Service. */
  readonly mirroredTo: readonly string[];
  /** The mirror percentages the decision carried, by `namespace/name`. */
  readonly mirrorPercent: Readonly<Record<string, number>>;
  /** The decision, when the evaluator made one (for failure messages). */
  readonly decision: Decision | undefined;
  /** A sentence explaining the outcome. */
  readonly reason: string;
}

function labelsMatch(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
): boolean {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([key, value]) => labels[key] === value);
}

/**
 * The Deployments whose pods a Service selects, by name; a Service that
 * selects none (or does not exist) is served by a workload of its own name.
 */
export function workloadsOf(objects: readonly KubeObject[], service: string): ServedBy {
  const [namespace, name] = service.split("/") as [string, string];
  const svc = objects.find(
    (o) => o.kind === "Service" && o.metadata?.namespace === namespace && o.metadata?.name === name,
  );
  const selector = (svc?.spec as { selector?: Record<string, string> } | undefined)?.selector ?? {};
  const workloads = objects
    .filter((o) => o.kind === "Deployment" && o.metadata?.namespace === namespace)
    .filter((o) => {
      const spec = o.spec as { template?: { metadata?: { labels?: Record<string, string> } } };
      return labelsMatch(selector, spec.template?.metadata?.labels ?? {});
    })
    .map((o) => o.metadata?.name as string);
  return { workloads: workloads.length > 0 ? workloads : [name], namespace };
}

/**
 * Builds the observation of a decision: a forwarded (or passthrough) request
 * is served by the workloads behind the chosen Service; the client sees the
 * backend's response headers after the decision's response header changes.
 */
export function observeDecision(
  decision: Decision,
  objects: readonly KubeObject[],
  backendResponseHeaders: Readonly<Record<string, string>> | undefined,
): Observed {
  const reached = decision.outcome === "forwarded" || decision.outcome === "passthrough";
  const backend = reached ? decision.backend : undefined;
  const initial = reached ? normalizeHeaders(backendResponseHeaders) : {};
  const mirrorPercent: Record<string, number> = {};
  for (const mirror of decision.mirrors) mirrorPercent[mirror.service] = mirror.percent;
  return {
    status: decision.status,
    grpcStatus: decision.grpcStatus,
    servedBy: backend === undefined ? undefined : workloadsOf(objects, backend.service),
    requestHeaders: decision.requestHeaders,
    responseHeaders: applyHeaderChanges(initial, decision.responseHeaderChanges),
    forwarded: decision.forwarded,
    location: decision.redirect?.location,
    mirroredTo: decision.mirrors.filter((m) => m.mirrored).map((m) => m.service),
    mirrorPercent,
    decision,
    reason: decision.reason,
  };
}

/** Builds the observation of an answer given before any route is evaluated (404, 421). */
export function observeAnswer(status: number, grpc: boolean, reason: string): Observed {
  return {
    status,
    grpcStatus: grpc ? grpcStatusForHttp(status) : undefined,
    servedBy: undefined,
    requestHeaders: {},
    responseHeaders: {},
    forwarded: undefined,
    location: undefined,
    mirroredTo: [],
    mirrorPercent: {},
    decision: undefined,
    reason,
  };
}

/** Builds the observation of a request sent straight to a workload (a pod IP): nothing routes it. */
export function observeDirect(
  servedBy: ServedBy,
  headers: Readonly<Record<string, string>> | undefined,
  forwarded: { readonly path: string; readonly host: string },
): Observed {
  return {
    ...observeAnswer(200, false, `sent straight to a ${servedBy.workloads.join("/")} pod`),
    servedBy,
    requestHeaders: normalizeHeaders(headers),
    forwarded,
  };
}
