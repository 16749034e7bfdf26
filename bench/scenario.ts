/**
 * The benchmark's scenario, pure and deterministic for a seed: a mesh of
 * exported services (a Service, its ServiceExport, a canary Service and a
 * producer HTTPRoute each, spread over namespaces), the dependency set of
 * every agent, and the plan of route edits.
 *
 * Dependency sets follow what a mesh looks like: every agent calls one of a
 * few popular services (an auth or a catalog service many workloads call)
 * and K−1 services drawn uniformly, so a change fans out to about 1 agent
 * for most services and to M / popular agents for the popular ones.
 */
import { stringify } from "yaml";
import type { KubeObject } from "../services/common/kube-object.js";
import { mulberry32 } from "../services/common/mulberry32.js";

/** The parameters of a scenario. */
export interface ScenarioOptions {
  /** How many exported services. */
  readonly services: number;
  /** How many agents (watch streams). */
  readonly agents: number;
  /** How many services each agent depends on. */
  readonly deps: number;
  /** How many route edits the propagation phase makes. */
  readonly changes: number;
  /** The seed of the pseudo-random choices. */
  readonly seed: number;
  /**
   * How many of the first `hotSpan` edits go to the hot service, a service
   * every agent depends on (default 0: no hot service).
   */
  readonly hot?: number;
  /** Over how many of the first edits the hot ones are spread (default `changes`). */
  readonly hotSpan?: number;
}

/** One agent of the scenario. */
export interface ScenarioAgent {
  /** Its index, 0-based. */
  readonly id: number;
  /** Its dependency set, `namespace/name`, sorted. */
  readonly deps: readonly string[];
}

/** One planned route edit. */
export interface ScenarioChange {
  /** Its index, 0-based. */
  readonly index: number;
  /** The service whose route is edited. */
  readonly service: string;
  /** The agents whose dependency set holds the service. */
  readonly interested: readonly number[];
  /** True for an edit of the hot service. */
  readonly hot: boolean;
}

/** A generated scenario. */
export interface Scenario {
  /** The exported services, `namespace/name`, in generation order. */
  readonly services: readonly string[];
  /** The popular services (a prefix of `services`). */
  readonly popular: readonly string[];
  /** The agents. */
  readonly agents: readonly ScenarioAgent[];
  /** The planned edits, every one to a service at least one agent depends on. */
  readonly changes: readonly ScenarioChange[];
  /** The hot service every agent depends on (the first service); undefined without `hot`. */
  readonly hot: string | undefined;
}

/** How many services share a namespace. */
export const SERVICES_PER_NAMESPACE = 100;

/** The namespace and name of the i-th service. */
export function serviceAt(index: number): { namespace: string; name: string } {
  const namespace = `ns-${String(Math.floor(index / SERVICES_PER_NAMESPACE)).padStart(4, "0")}`;
  return { namespace, name: `svc-${String(index).padStart(6, "0")}` };
}

/** Builds the scenario: services, dependency sets and the edit plan. */
export function createScenario(options: ScenarioOptions): Scenario {
  const { services: n, agents: m, deps: k, changes: c } = options;
  if (n < 1 || m < 1 || k < 1) throw new RangeError("services, agents and deps must be ≥ 1");
  if (k > n) throw new RangeError(`--deps ${k} is more than --services ${n}`);
  const random = mulberry32(options.seed);
  const services = Array.from({ length: n }, (_, i) => {
    const { namespace, name } = serviceAt(i);
    return `${namespace}/${name}`;
  });
  const popularCount = Math.max(1, Math.min(10, Math.floor(n / 1000)));
  const popular = services.slice(0, popularCount);
  const hotCount = options.hot ?? 0;
  const hot = hotCount > 0 ? (services[0] as string) : undefined;
  const interested = new Map<string, number[]>();
  const agents: ScenarioAgent[] = [];
  for (let id = 0; id < m; id++) {
    const chosen = new Set<string>(
      hot === undefined ? [popular[id % popularCount] as string] : [hot],
    );
    if (chosen.size < k) chosen.add(popular[id % popularCount] as string);
    while (chosen.size < k) chosen.add(services[Math.floor(random() * n)] as string);
    const deps = [...chosen].sort();
    for (const service of deps) {
      const list = interested.get(service) ?? [];
      list.push(id);
      interested.set(service, list);
    }
    agents.push({ id, deps });
  }
  // Every fifth edit is to a popular service (a wide fan-out); the rest to
  // services drawn uniformly among those someone depends on.
  const wanted = [...interested.keys()].filter((s) => !popular.includes(s)).sort();
  const hotPlan = planHotChanges(hotCount, Math.min(c, options.hotSpan ?? c));
  const changes: ScenarioChange[] = [];
  for (let index = 0; index < c; index++) {
    const isHot = hotPlan[index] === true;
    const service = isHot
      ? (hot as string)
      : index % 5 === 4 || wanted.length === 0
        ? (popular[Math.floor(index / 5) % popularCount] as string)
        : (wanted[Math.floor(random() * wanted.length)] as string);
    changes.push({ index, service, interested: interested.get(service) ?? [], hot: isHot });
  }
  return { services, popular, agents, changes, hot };
}

/**
 * Which of `span` edits go to the hot service: `count` of them, spread
 * evenly (edit i is hot when ⌊(i+1)·count/span⌋ passes a whole number), the
 * last of the span always among them. Throws when `count` > `span`.
 */
export function planHotChanges(count: number, span: number): boolean[] {
  if (count > span) throw new RangeError(`--hot ${count} is more than the ${span} edits`);
  return Array.from(
    { length: span },
    (_, i) => Math.floor(((i + 1) * count) / span) > Math.floor((i * count) / span),
  );
}

/**
 * The producer HTTPRoute of the i-th service, as of edit `edit` (0 is the
 * initial route; each edit changes a response header's value, so the
 * projection's content changes and nothing else does).
 */
export function routeObject(index: number, edit: number): KubeObject {
  const { namespace, name } = serviceAt(index);
  return {
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name, namespace, creationTimestamp: "2026-11-01T00:00:00Z" },
    spec: {
      parentRefs: [{ group: "", kind: "Service", name, port: 8080 }],
      rules: [
        {
          name: "api-v2",
          matches: [{ path: { type: "PathPrefix", value: "/api/v2" } }],
          filters: [
            {
              type: "URLRewrite",
              urlRewrite: { path: { type: "ReplacePrefixMatch", replacePrefixMatch: "/v2" } },
            },
          ],
          backendRefs: [
            { name, port: 8080, weight: 90 },
            { name: `${name}-canary`, port: 8080, weight: 10 },
          ],
        },
        {
          name: "admin",
          matches: [
            {
              path: { type: "PathPrefix", value: "/admin" },
              headers: [{ name: "x-role", value: "admin" }],
            },
          ],
          backendRefs: [{ name, port: 8080 }],
        },
        {
          name: "default",
          filters: [
            {
              type: "ResponseHeaderModifier",
              responseHeaderModifier: { set: [{ name: "x-config-edit", value: String(edit) }] },
            },
          ],
          backendRefs: [{ name, port: 8080 }],
          timeouts: { request: "5s" },
        },
      ],
    },
  };
}

/** The objects of the i-th service besides its route: the Service, its canary, the ServiceExport. */
export function serviceObjects(index: number): KubeObject[] {
  const { namespace, name } = serviceAt(index);
  const service = (serviceName: string): KubeObject => ({
    apiVersion: "v1",
    kind: "Service",
    metadata: { name: serviceName, namespace },
    spec: { ports: [{ name: "http", port: 8080, protocol: "TCP" }] },
  });
  return [
    service(name),
    service(`${name}-canary`),
    {
      apiVersion: "multicluster.x-k8s.io/v1alpha1",
      kind: "ServiceExport",
      metadata: { name, namespace },
    },
  ];
}

/** Every object of a mesh of `count` services, as of edit 0, namespaces first. */
export function meshObjects(count: number): KubeObject[] {
  const objects: KubeObject[] = [];
  const namespaces = Math.ceil(count / SERVICES_PER_NAMESPACE);
  for (let i = 0; i < namespaces; i++) {
    objects.push({
      apiVersion: "v1",
      kind: "Namespace",
      metadata: { name: serviceAt(i * SERVICES_PER_NAMESPACE).namespace },
    });
  }
  for (let i = 0; i < count; i++) objects.push(...serviceObjects(i), routeObject(i, 0));
  return objects;
}

/**
 * The mesh as manifest files (one multi-document YAML file per namespace),
 * for a registrar's `--export-source dir:`: file name → text.
 */
export function meshManifests(count: number): Map<string, string> {
  const files = new Map<string, string>();
  const namespaces = Math.ceil(count / SERVICES_PER_NAMESPACE);
  for (let ns = 0; ns < namespaces; ns++) files.set(...namespaceManifest(count, ns, new Map()));
  return files;
}

/**
 * The manifest file of namespace number `ns` of a mesh of `count` services
 * (as {@link meshManifests} writes it), each route at its edit number in
 * `edits` (service index → edit; 0 when absent): [file name, text].
 */
export function namespaceManifest(
  count: number,
  ns: number,
  edits: ReadonlyMap<number, number>,
): [string, string] {
  const namespace = serviceAt(ns * SERVICES_PER_NAMESPACE).namespace;
  const documents: KubeObject[] = [
    { apiVersion: "v1", kind: "Namespace", metadata: { name: namespace } },
  ];
  const end = Math.min(count, (ns + 1) * SERVICES_PER_NAMESPACE);
  for (let i = ns * SERVICES_PER_NAMESPACE; i < end; i++) {
    documents.push(...serviceObjects(i), routeObject(i, edits.get(i) ?? 0));
  }
  return [`${namespace}.yaml`, documents.map((d) => stringify(d)).join("---\n")];
}

/** The index of a service generated by {@link serviceAt}, from `namespace/name`. */
export function serviceIndex(service: string): number {
  const name = service.slice(service.indexOf("/") + 1);
  return Number.parseInt(name.slice("svc-".length), 10);
}
