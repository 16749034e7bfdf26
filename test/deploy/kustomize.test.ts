/**
 * deploy/: renders the hub and spoke overlays (and the examples built on
 * them: a sandbox hub with its own etcd, two operator spoke overlays) with
 * `kubectl kustomize` and checks what an operator relies on: hardened,
 * probed, bounded workloads; one control-cluster name everywhere; the hub
 * without agents and the spoke without export; read-only RBAC on exactly the
 * kinds the registrar watches, bound to the right ServiceAccounts; etcd TLS
 * flags and a required Secret exactly where components/etcd-tls is used.
 *
 * Skipped, loudly, only when kubectl is not installed (CI has it).
 */
import { basename, dirname, posix } from "node:path";
import { beforeAll, describe, expect, it } from "vitest";
import { STATUS_WRITTEN_RESOURCES } from "../../services/common/status-plan.js";
import { KUBERNETES_SOURCE_RESOURCES } from "../../services/sources/kubernetes-source.js";
import {
  allContainers,
  type Container,
  durationSeconds,
  effectiveArgs,
  find,
  flagValue,
  flagValues,
  hasKubectl,
  type KubeObject,
  ofKind,
  type PodSpec,
  render,
  type Workload,
  workload,
  workloads,
} from "./rendered-manifests.js";

if (!hasKubectl) {
  console.warn(
    "test/deploy/kustomize.test.ts: kubectl is not installed, so the deploy/ Kustomize " +
      "renderings are NOT checked here. Install kubectl (CI has it) to run these tests.",
  );
}

const HUB = "deploy/overlays/hub";
const SPOKE = "deploy/overlays/spoke";
const SANDBOX_HUB = "deploy/examples/sandbox-hub";
const TLS_HUB = "deploy/examples/hub-etcd-tls";
const EAST = "deploy/examples/spoke-east";
const WEST = "deploy/examples/spoke-west";
/** With components/mtls-spiffe (test/deploy/mtls.test.ts checks the mTLS parts). */
const MTLS_HUB = "deploy/examples/hub-mtls";
const MTLS_EAST = "deploy/examples/spoke-east-mtls";
/** With components/mtls-cert-manager (the same checks, test/deploy/mtls-svid-sources.test.ts). */
const MTLS_WEST = "deploy/examples/spoke-west-mtls";
/** With components/signatures (+ signing-key on the hub; test/deploy/signatures.test.ts). */
const SIGNED_HUB = "deploy/examples/hub-signatures";
const SIGNED_EAST = "deploy/examples/spoke-east-signatures";
const CRDS = "deploy/crds";
/** Every rendering of a cluster's install. */
const INSTALLS = [
  HUB,
  SPOKE,
  SANDBOX_HUB,
  TLS_HUB,
  EAST,
  WEST,
  MTLS_HUB,
  MTLS_EAST,
  MTLS_WEST,
  SIGNED_HUB,
  SIGNED_EAST,
];
/** The renderings with agents. */
const SPOKES = [SPOKE, EAST, WEST, MTLS_EAST, MTLS_WEST, SIGNED_EAST];
/** The renderings whose agents read local routes from the API (components/agent-local-routes). */
const LOCAL_ROUTES = [WEST, MTLS_WEST];
/** The renderings of a control cluster. */
const HUBS = [HUB, SANDBOX_HUB, TLS_HUB, MTLS_HUB, SIGNED_HUB];
/** The renderings with components/etcd-tls. */
const ETCD_TLS = [TLS_HUB];
/** The etcd TLS flags of components/etcd-tls, and the key of Secret aether-etcd-tls each names. */
const ETCD_TLS_FLAGS = {
  "etcd-ca-file": "ca.crt",
  "etcd-cert-file": "tls.crt",
  "etcd-key-file": "tls.key",
};

const NAMESPACE = "aether-system";
/** The workloads that run the aether image. */
const AETHER_WORKLOADS = ["aether-registrar", "aether-agent"];
const READ_VERBS = new Set(["get", "list", "watch"]);
/**
 * components/mtls-cert-manager's Role: csi-driver-spiffe creates each pod's
 * CertificateRequest as the pod's ServiceAccount, with a token the kubelet
 * hands the driver (never mounted in the pod). Its rules and bindings are
 * checked exactly in mtls-svid-sources.test.ts; the API-reading roles here.
 */
const SVID_REQUEST_ROLE = "aether-svid-requests";

/** `group/plural` of every kind the Kubernetes source (export, local routes) watches. */
const WATCHED = new Set(KUBERNETES_SOURCE_RESOURCES.map((r) => `${r.group}/${r.plural}`));

/** Whether `rule` grants something on a status subresource (checked apart from the read rules). */
function isStatusPatch(rule: PolicyRule): boolean {
  return (rule.resources ?? []).some((r) => r.endsWith("/status")) || rule.verbs.includes("patch");
}

/** A rule of a Role or ClusterRole. */
interface PolicyRule {
  readonly apiGroups?: readonly string[];
  readonly resources?: readonly string[];
  readonly verbs: readonly string[];
  readonly nonResourceURLs?: readonly string[];
}

/** A RoleBinding or ClusterRoleBinding. */
interface Binding extends KubeObject {
  readonly roleRef: { readonly apiGroup: string; readonly kind: string; readonly name: string };
  readonly subjects?: readonly {
    readonly kind: string;
    readonly name: string;
    readonly namespace?: string;
  }[];
}

/** What is wrong with one container's hardening, probes and resources (empty: nothing). */
function containerProblems(pod: PodSpec, container: Container, probed: boolean): string[] {
  const problems: string[] = [];
  const own = container.securityContext ?? {};
  const podLevel = pod.securityContext ?? {};
  const expectThat = (ok: boolean, what: string) => {
    if (!ok) problems.push(`${container.name}: ${what}`);
  };
  expectThat((own.runAsNonRoot ?? podLevel.runAsNonRoot) === true, "runAsNonRoot is not true");
  const uid = own.runAsUser ?? podLevel.runAsUser;
  expectThat(uid !== undefined && uid !== 0, `runAsUser is ${String(uid)}, not a non-root UID`);
  expectThat(own.readOnlyRootFilesystem === true, "readOnlyRootFilesystem is not true");
  expectThat(own.allowPrivilegeEscalation === false, "allowPrivilegeEscalation is not false");
  expectThat(own.privileged !== true, "privileged");
  expectThat(own.capabilities?.drop?.includes("ALL") === true, "capabilities do not drop ALL");
  expectThat((own.capabilities?.add ?? []).length === 0, "adds capabilities");
  const seccomp = own.seccompProfile?.type ?? podLevel.seccompProfile?.type;
  expectThat(seccomp === "RuntimeDefault", `seccomp profile is ${String(seccomp)}`);
  for (const resource of ["cpu", "memory"]) {
    expectThat(container.resources?.requests?.[resource] !== undefined, `no ${resource} request`);
    expectThat(container.resources?.limits?.[resource] !== undefined, `no ${resource} limit`);
  }
  expectThat(
    container.image !== undefined &&
      /:[\w][\w.-]*$/.test(container.image) &&
      !container.image.endsWith(":latest"),
    `image ${String(container.image)} has no pinned tag`,
  );
  if (probed) {
    for (const probe of ["livenessProbe", "readinessProbe"] as const) {
      const port = container[probe]?.httpGet?.port;
      expectThat(port !== undefined, `no HTTP ${probe}`);
      expectThat(
        (container.ports ?? []).some((p) => p.name === port || p.containerPort === port),
        `${probe} port ${String(port)} is not a container port`,
      );
    }
  }
  for (const mount of container.volumeMounts ?? []) {
    const volume = (pod.volumes ?? []).find((v) => v.name === mount.name);
    expectThat(volume !== undefined, `mounts undeclared volume ${mount.name}`);
    if (volume !== undefined && mount.readOnly !== true) {
      expectThat(
        volume.emptyDir !== undefined || volume.hostPath !== undefined,
        `writable mount ${mount.mountPath} is not an emptyDir or hostPath`,
      );
    }
  }
  return problems;
}

/** The effective args of the one container of a workload. */
function soleContainerArgs(objects: readonly KubeObject[], w: Workload): string[] {
  expect(w.pod.containers).toHaveLength(1);
  return effectiveArgs(w.pod.containers[0] as Container, objects);
}

/** True when a mount of `container` at `dir` (or above it) is a writable emptyDir or hostPath. */
function writableVolumeHolds(pod: PodSpec, container: Container, path: string): boolean {
  return (container.volumeMounts ?? []).some((mount) => {
    const volume = (pod.volumes ?? []).find((v) => v.name === mount.name);
    const inside = path === mount.mountPath || path.startsWith(`${mount.mountPath}/`);
    return (
      inside &&
      mount.readOnly !== true &&
      (volume?.emptyDir !== undefined || volume?.hostPath !== undefined)
    );
  });
}

/** True when every label of `selector` is among `labels`. */
function selects(
  selector: Readonly<Record<string, string>>,
  labels: Readonly<Record<string, string>>,
) {
  const entries = Object.entries(selector);
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v);
}

describe.skipIf(!hasKubectl)("deploy/ Kustomize renderings (kubectl kustomize)", () => {
  const rendered = new Map<string, KubeObject[]>();
  /** The rendering of `dir` (rendered once, in beforeAll). */
  const objectsOf = (dir: string): KubeObject[] => {
    const objects = rendered.get(dir);
    if (objects === undefined) throw new Error(`${dir} was not rendered`);
    return objects;
  };

  beforeAll(async () => {
    await Promise.all(
      [...INSTALLS, CRDS].map(async (dir) => {
        rendered.set(dir, await render(dir));
      }),
    );
  }, 60_000);

  describe("every workload", () => {
    it.each(INSTALLS)(
      "%s: every container runs as non-root with a read-only root file system, probes and limits",
      (dir) => {
        const all = workloads(objectsOf(dir));
        expect(all.length).toBeGreaterThan(0);
        const problems = all.flatMap((w) => {
          expect(w.pod.hostNetwork).not.toBe(true);
          return [
            ...(w.pod.initContainers ?? []).flatMap((c) => containerProblems(w.pod, c, false)),
            ...w.pod.containers.flatMap((c) => containerProblems(w.pod, c, true)),
          ].map((p) => `${w.object.kind} ${w.object.metadata.name}: ${p}`);
        });
        expect(problems).toEqual([]);
      },
    );

    it.each(INSTALLS)(
      "%s: aether containers probe /healthz (liveness) and /readyz (readiness)",
      (dir) => {
        // The main containers: an init container (spiffe-helper) is not an aether program.
        const aether = workloads(objectsOf(dir))
          .filter((w) => AETHER_WORKLOADS.includes(w.object.metadata.name))
          .flatMap((w) => w.pod.containers);
        expect(aether.length).toBeGreaterThan(0);
        for (const container of aether) {
          expect(container.livenessProbe?.httpGet?.path, container.name).toBe("/healthz");
          expect(container.readinessProbe?.httpGet?.path, container.name).toBe("/readyz");
          expect(container.command?.[0], container.name).toMatch(
            /^\/app\/bin\/aether-(registrar|agent)$/,
          );
        }
      },
    );

    it.each(INSTALLS)(
      "%s: everything namespaced lives in aether-system, which enforces restricted",
      (dir) => {
        const objects = objectsOf(dir);
        const namespace = find(objects, "Namespace", NAMESPACE);
        expect(namespace.metadata.labels?.["pod-security.kubernetes.io/enforce"]).toBe(
          "restricted",
        );
        const clusterScoped = new Set([
          "Namespace",
          "ClusterRole",
          "ClusterRoleBinding",
          "CustomResourceDefinition",
        ]);
        for (const object of objects.filter((o) => !clusterScoped.has(o.kind))) {
          expect(object.metadata.namespace, `${object.kind} ${object.metadata.name}`).toBe(
            NAMESPACE,
          );
        }
      },
    );
  });

  describe("network policies", () => {
    interface Policy {
      readonly podSelector: { readonly matchLabels?: Readonly<Record<string, string>> };
      readonly policyTypes?: readonly string[];
      readonly ingress?: readonly {
        readonly from?: readonly unknown[];
        readonly ports?: readonly { readonly port?: number | string }[];
      }[];
    }
    const policiesOf = (objects: readonly KubeObject[]) =>
      ofKind(objects, "NetworkPolicy").map((o) => ({
        name: o.metadata.name,
        spec: o.spec as Policy,
      }));

    it.each(INSTALLS)(
      "%s: ingress is denied by default, and every container port is admitted by a policy of its pod, from named peers only",
      (dir) => {
        const objects = objectsOf(dir);
        const policies = policiesOf(objects);
        const denyAll = policies.filter(
          (p) =>
            Object.keys(p.spec.podSelector.matchLabels ?? {}).length === 0 &&
            p.spec.policyTypes?.includes("Ingress") &&
            (p.spec.ingress ?? []).length === 0,
        );
        expect(denyAll.map((p) => p.name)).toEqual(["aether-default-deny-ingress"]);
        const uncovered: string[] = [];
        for (const w of workloads(objects)) {
          const own = policies.filter((p) =>
            selects(p.spec.podSelector.matchLabels ?? {}, w.podLabels),
          );
          for (const container of w.pod.containers) {
            for (const port of container.ports ?? []) {
              const admitted = own.some((p) =>
                (p.spec.ingress ?? []).some(
                  (rule) =>
                    (rule.from ?? []).length > 0 &&
                    (rule.ports ?? []).some(
                      (q) => q.port === port.name || q.port === port.containerPort,
                    ),
                ),
              );
              if (!admitted) uncovered.push(`${w.object.metadata.name}:${port.containerPort}`);
            }
          }
        }
        expect(uncovered).toEqual([]);
      },
    );

    it.each(SPOKES)(
      "%s: /routes (:8082) is open to data-plane pods only, metrics (:8081) to scraping namespaces only",
      (dir) => {
        const policy = policiesOf(objectsOf(dir)).find((p) => p.name === "aether-agent");
        expect(policy?.spec.ingress).toEqual([
          {
            from: [
              {
                namespaceSelector: {},
                podSelector: { matchLabels: { "aether.dev/data-plane": "true" } },
              },
            ],
            ports: [{ port: "routes", protocol: "TCP" }],
          },
          {
            from: [{ namespaceSelector: { matchLabels: { "aether.dev/scrape": "true" } } }],
            ports: [{ port: "http", protocol: "TCP" }],
          },
        ]);
      },
    );
  });

  describe("one control cluster", () => {
    it("hub registrar, spoke registrars and spoke agents all name the same control cluster", () => {
      const seen: { where: string; value: string }[] = [];
      for (const dir of HUBS) {
        const objects = objectsOf(dir);
        const args = soleContainerArgs(
          objects,
          workload(objects, "Deployment", "aether-registrar"),
        );
        seen.push({
          where: `${dir} registrar --control-cluster`,
          value: flagValue(args, "control-cluster"),
        });
        // The hub is the control cluster: its own name is the control cluster's.
        seen.push({ where: `${dir} registrar --cluster`, value: flagValue(args, "cluster") });
      }
      for (const dir of SPOKES) {
        const objects = objectsOf(dir);
        for (const [kind, name] of [
          ["Deployment", "aether-registrar"],
          ["DaemonSet", "aether-agent"],
        ] as const) {
          const args = soleContainerArgs(objects, workload(objects, kind, name));
          seen.push({
            where: `${dir} ${name} --control-cluster`,
            value: flagValue(args, "control-cluster"),
          });
        }
      }
      const control = seen[0]?.value;
      expect(control).toMatch(/^[a-z0-9][a-z0-9-]*$/);
      expect(seen.filter((s) => s.value !== control)).toEqual([]);
    });

    it("each spoke's registrar and agent share the spoke's own name, unlike the hub's", () => {
      const names = SPOKES.map((dir) => {
        const objects = objectsOf(dir);
        const registrar = soleContainerArgs(
          objects,
          workload(objects, "Deployment", "aether-registrar"),
        );
        const agent = soleContainerArgs(objects, workload(objects, "DaemonSet", "aether-agent"));
        expect(flagValue(agent, "cluster")).toBe(flagValue(registrar, "cluster"));
        expect(flagValue(registrar, "cluster")).not.toBe(flagValue(registrar, "control-cluster"));
        return flagValue(registrar, "cluster");
      });
      expect(names).toEqual(["spoke", "east", "west", "east", "west", "east"]);
    });
  });

  describe("the hub", () => {
    it.each(HUBS)(
      "%s: two registrar replicas exporting from the Kubernetes API into etcd",
      (dir) => {
        const objects = objectsOf(dir);
        const registrar = workload(objects, "Deployment", "aether-registrar");
        const args = soleContainerArgs(objects, registrar);
        expect(registrar.replicas).toBe(2);
        expect(flagValue(args, "export-source")).toBe("kubernetes");
        expect(flagValue(args, "store")).toBe("etcd");
        expect(flagValue(args, "listen")).toBe("0.0.0.0:8080");
        expect(durationSeconds(flagValue(args, "election-ttl"))).toBeGreaterThan(0);
        expect(registrar.pod.automountServiceAccountToken).toBe(true);
        const grace = registrar.pod.terminationGracePeriodSeconds ?? 30;
        expect(grace).toBeGreaterThan(durationSeconds(flagValue(args, "drain-timeout")));
      },
    );

    it.each(HUBS)("%s: a PodDisruptionBudget keeps one of the two replicas up", (dir) => {
      const objects = objectsOf(dir);
      const registrar = workload(objects, "Deployment", "aether-registrar");
      const budgets = ofKind(objects, "PodDisruptionBudget").filter((pdb) =>
        selects(
          (pdb.spec as { selector: { matchLabels: Record<string, string> } }).selector.matchLabels,
          registrar.podLabels,
        ),
      );
      expect(budgets).toHaveLength(1);
      const spec = (budgets[0] as KubeObject).spec as {
        maxUnavailable?: number;
        minAvailable?: number;
      };
      const available = spec.minAvailable ?? (registrar.replicas ?? 1) - (spec.maxUnavailable ?? 0);
      expect(available).toBeGreaterThanOrEqual(1);
      expect(available).toBeLessThan(registrar.replicas ?? 1);
    });

    it.each(HUBS)("%s: has no agent", (dir) => {
      const objects = objectsOf(dir);
      expect(ofKind(objects, "DaemonSet")).toEqual([]);
      expect(objects.filter((o) => o.metadata.name.startsWith("aether-agent"))).toEqual([]);
      const programs = workloads(objects).flatMap((w) =>
        allContainers(w.pod).map((c) => c.command?.[0]),
      );
      expect(programs).not.toContain("/app/bin/aether-agent");
    });

    it(`${HUB}: etcd endpoints come from the operator's ConfigMap aether-etcd`, () => {
      const objects = objectsOf(HUB);
      const container = workload(objects, "Deployment", "aether-registrar").pod
        .containers[0] as Container;
      const endpoints = flagValue(effectiveArgs(container, objects), "etcd-endpoints");
      expect(endpoints).toBe("$(AETHER_ETCD_ENDPOINTS)");
      const variable = container.env?.find((e) => e.name === "AETHER_ETCD_ENDPOINTS");
      expect(variable?.valueFrom?.configMapKeyRef).toEqual({
        name: "aether-etcd",
        key: "ENDPOINTS",
      });
      expect(ofKind(objects, "ConfigMap").map((c) => c.metadata.name)).not.toContain("aether-etcd");
    });

    it(`${SANDBOX_HUB}: the registrars use the sandbox etcd`, () => {
      const objects = objectsOf(SANDBOX_HUB);
      const args = soleContainerArgs(objects, workload(objects, "Deployment", "aether-registrar"));
      const endpoint = new URL(flagValue(args, "etcd-endpoints"));
      const service = find(objects, "Service", endpoint.hostname);
      const ports = (service.spec as { ports: { port: number }[] }).ports.map((p) => p.port);
      expect(ports).toContain(Number(endpoint.port));
      const etcd = workload(objects, "Deployment", "aether-etcd-sandbox");
      expect(
        selects((service.spec as { selector: Record<string, string> }).selector, etcd.podLabels),
      ).toBe(true);
      expect(etcd.replicas).toBe(1);
    });
  });

  describe("the spokes", () => {
    it.each(SPOKES)(
      "%s: the registrar imports only: no export source, an API token only to read local routes",
      (dir) => {
        const objects = objectsOf(dir);
        const registrar = workload(objects, "Deployment", "aether-registrar");
        const args = soleContainerArgs(objects, registrar);
        expect(flagValues(args, "export-source")).toEqual([]);
        expect(flagValues(args, "election-ttl")).toEqual([]);
        expect(flagValue(args, "store")).toBe("etcd");
        const local = LOCAL_ROUTES.includes(dir);
        expect(flagValues(args, "local-source")).toEqual(local ? ["kubernetes"] : []);
        expect(registrar.pod.automountServiceAccountToken).toBe(local);
      },
    );

    it.each(SPOKES)("%s: the agent DaemonSet follows this cluster's registrar Service", (dir) => {
      const objects = objectsOf(dir);
      const agent = workload(objects, "DaemonSet", "aether-agent");
      const args = soleContainerArgs(objects, agent);
      const url = new URL(flagValue(args, "registrar"));
      const service = find(objects, "Service", url.hostname);
      const spec = service.spec as { selector: Record<string, string>; ports: { port: number }[] };
      expect(spec.ports.map((p) => p.port)).toContain(Number(url.port));
      const registrar = workload(objects, "Deployment", "aether-registrar");
      expect(selects(spec.selector, registrar.podLabels)).toBe(true);
    });

    it.each(SPOKES)(
      "%s: the agent reads its deps from a mounted ConfigMap and writes only to volumes",
      (dir) => {
        const objects = objectsOf(dir);
        const agent = workload(objects, "DaemonSet", "aether-agent");
        const container = agent.pod.containers[0] as Container;
        const args = effectiveArgs(container, objects);
        expect(flagValues(args, "deps")).toEqual([]);
        const depsFile = flagValue(args, "deps-file");
        const mount = container.volumeMounts?.find((m) => m.mountPath === dirname(depsFile));
        const volume = agent.pod.volumes?.find((v) => v.name === mount?.name);
        expect(
          volume?.configMap,
          "the deps file's directory is a whole ConfigMap volume (no subPath)",
        ).toBeDefined();
        const configMap = find(objects, "ConfigMap", volume?.configMap?.name ?? "");
        expect(Object.keys(configMap.data as Record<string, string>)).toContain(basename(depsFile));
        for (const flag of ["cache-dir", "out"]) {
          expect(
            writableVolumeHolds(agent.pod, container, posix.normalize(flagValue(args, flag))),
            flag,
          ).toBe(true);
        }
        expect(flagValue(args, "listen")).toBe("0.0.0.0:8081");
        expect(flagValue(args, "routes-listen")).toBe("0.0.0.0:8082");
        expect(container.ports?.map((p) => p.containerPort)).toEqual([8081, 8082]);
      },
    );

    it.each([SPOKE, EAST, MTLS_EAST, SIGNED_EAST])(
      "%s: the agent has no Kubernetes API access at all",
      (dir) => {
        const objects = objectsOf(dir);
        const agent = workload(objects, "DaemonSet", "aether-agent");
        expect(agent.pod.automountServiceAccountToken).toBe(false);
        expect(find(objects, "ServiceAccount", "aether-agent").automountServiceAccountToken).toBe(
          false,
        );
        const bindings = [
          ...ofKind(objects, "RoleBinding"),
          ...ofKind(objects, "ClusterRoleBinding"),
        ] as Binding[];
        expect(bindings.filter((b) => b.subjects?.some((s) => s.name === "aether-agent"))).toEqual(
          [],
        );
        expect(flagValues(soleContainerArgs(objects, agent), "local-source")).toEqual([]);
      },
    );

    it.each(LOCAL_ROUTES)(
      "%s: with local routes, the agent reads its cluster's routes read-only",
      (dir) => {
        const objects = objectsOf(dir);
        const agent = workload(objects, "DaemonSet", "aether-agent");
        expect(flagValue(soleContainerArgs(objects, agent), "local-source")).toBe("kubernetes");
        expect(agent.pod.automountServiceAccountToken).toBe(true);
      },
    );
  });

  describe("etcd TLS", () => {
    it.each(ETCD_TLS)(
      "%s: the registrar reads the CA, certificate and key from the required Secret aether-etcd-tls",
      (dir) => {
        const objects = objectsOf(dir);
        const registrar = workload(objects, "Deployment", "aether-registrar");
        const container = registrar.pod.containers[0] as Container;
        const args = soleContainerArgs(objects, registrar);
        const volume = registrar.pod.volumes?.find(
          (v) => v.secret?.secretName === "aether-etcd-tls",
        );
        expect(volume?.secret?.optional, "the Secret volume is required").toBe(false);
        const mount = container.volumeMounts?.find((m) => m.name === volume?.name);
        expect(mount?.readOnly).toBe(true);
        for (const [flag, key] of Object.entries(ETCD_TLS_FLAGS)) {
          expect(flagValue(args, flag), flag).toBe(posix.join(mount?.mountPath ?? "?", key));
        }
        expect(flagValue(args, "etcd-ca-file")).toBe("/etc/aether/etcd-tls/ca.crt");
        expect(flagValue(args, "store")).toBe("etcd");
      },
    );

    it.each(INSTALLS.filter((dir) => !ETCD_TLS.includes(dir)))(
      "%s: without components/etcd-tls, no etcd TLS flags and the Secret stays optional",
      (dir) => {
        const objects = objectsOf(dir);
        const registrar = workload(objects, "Deployment", "aether-registrar");
        const args = soleContainerArgs(objects, registrar);
        for (const flag of Object.keys(ETCD_TLS_FLAGS)) expect(flagValues(args, flag)).toEqual([]);
        const volume = registrar.pod.volumes?.find(
          (v) => v.secret?.secretName === "aether-etcd-tls",
        );
        expect(volume?.secret?.optional).toBe(true);
      },
    );
  });

  describe("RBAC", () => {
    it.each(INSTALLS)(
      "%s: roles grant only get/list/watch on the kinds the registrar watches",
      (dir) => {
        const roles = [
          ...ofKind(objectsOf(dir), "Role"),
          ...ofKind(objectsOf(dir), "ClusterRole"),
        ].filter((role) => role.metadata.name !== SVID_REQUEST_ROLE);
        for (const role of roles) {
          const rules = (role.rules ?? []) as PolicyRule[];
          expect(rules.length, role.metadata.name).toBeGreaterThan(0);
          for (const rule of rules.filter((r) => !isStatusPatch(r))) {
            expect(rule.nonResourceURLs, role.metadata.name).toBeUndefined();
            expect(
              rule.verbs.filter((v) => !READ_VERBS.has(v)),
              role.metadata.name,
            ).toEqual([]);
            for (const group of rule.apiGroups ?? []) {
              for (const resource of rule.resources ?? []) {
                expect(
                  WATCHED.has(`${group}/${resource}`),
                  `${role.metadata.name}: ${group}/${resource}`,
                ).toBe(true);
              }
            }
          }
        }
      },
    );

    it.each(HUBS)(
      "%s: the export role covers exactly what the Kubernetes source watches",
      (dir) => {
        const role = find(objectsOf(dir), "ClusterRole", "aether-registrar-export");
        const granted = new Set(
          ((role.rules ?? []) as PolicyRule[]).flatMap((rule) =>
            rule.verbs.length === READ_VERBS.size && rule.verbs.every((v) => READ_VERBS.has(v))
              ? (rule.apiGroups ?? []).flatMap((g) =>
                  (rule.resources ?? []).map((r) => `${g}/${r}`),
                )
              : [],
          ),
        );
        expect([...granted].sort()).toEqual([...WATCHED].sort());
      },
    );

    it.each(INSTALLS)(
      "%s: only the export role patches, and only the status of the objects it writes status to",
      (dir) => {
        const objects = objectsOf(dir);
        const patching = [...ofKind(objects, "Role"), ...ofKind(objects, "ClusterRole")].filter(
          (role) => ((role.rules ?? []) as PolicyRule[]).some(isStatusPatch),
        );
        const hub = HUBS.includes(dir);
        expect(patching.map((r) => r.metadata.name)).toEqual(
          hub ? ["aether-registrar-export"] : [],
        );
        const granted = patching.flatMap((role) =>
          ((role.rules ?? []) as PolicyRule[]).filter(isStatusPatch).flatMap((rule) => {
            expect(rule.verbs).toEqual(["patch"]);
            return (rule.apiGroups ?? []).flatMap((g) =>
              (rule.resources ?? []).map((r) => `${g}/${r}`),
            );
          }),
        );
        expect(granted.sort()).toEqual(hub ? [...STATUS_WRITTEN_RESOURCES].sort() : []);
      },
    );

    it.each(INSTALLS)(
      "%s: each binding binds its role to the ServiceAccount of the pods that need it",
      (dir) => {
        const objects = objectsOf(dir);
        const bindings = [
          ...ofKind(objects, "RoleBinding"),
          ...ofKind(objects, "ClusterRoleBinding"),
        ] as Binding[];
        /** The ServiceAccount each API-reading binding (by name) binds. */
        const expected: Record<string, string> = {
          "aether-registrar-export": "aether-registrar",
          "aether-agent-local-routes": "aether-agent",
          "aether-registrar-local-routes": "aether-registrar",
        };
        /** The ServiceAccounts bound to API-reading roles (not the SVID request role). */
        const bound = new Set<string>();
        for (const binding of bindings) {
          find(objects, binding.roleRef.kind, binding.roleRef.name);
          expect(binding.roleRef.apiGroup).toBe("rbac.authorization.k8s.io");
          expect(binding.subjects?.length, binding.metadata.name).toBe(1);
          const svid = binding.roleRef.name === SVID_REQUEST_ROLE;
          for (const subject of binding.subjects ?? []) {
            expect(subject.kind).toBe("ServiceAccount");
            expect(subject.name, binding.metadata.name).toBe(
              svid
                ? binding.metadata.name.replace(/-svid-requests$/, "")
                : expected[binding.metadata.name],
            );
            const account = find(objects, "ServiceAccount", subject.name);
            expect(subject.namespace, binding.metadata.name).toBe(account.metadata.namespace);
            if (!svid) bound.add(subject.name);
          }
        }
        // A pod gets a token exactly when its ServiceAccount has API rights to use.
        for (const w of workloads(objects)) {
          const account = w.pod.serviceAccountName ?? "default";
          expect(
            w.pod.automountServiceAccountToken === true,
            `${w.object.metadata.name} token`,
          ).toBe(bound.has(account));
        }
        const wanted = LOCAL_ROUTES.includes(dir)
          ? ["aether-agent", "aether-registrar"]
          : HUBS.includes(dir)
            ? ["aether-registrar"]
            : [];
        expect([...bound].sort()).toEqual(wanted);
      },
    );
  });

  describe("the ServiceExport CRD", () => {
    it("is multicluster.x-k8s.io/v1alpha1 ServiceExport, namespaced, with a status subresource", () => {
      const crd = objectsOf(CRDS).find((o) => o.metadata.name.endsWith(".multicluster.x-k8s.io"));
      const spec = (crd as KubeObject).spec as {
        group: string;
        scope: string;
        names: { kind: string; plural: string };
        versions: {
          name: string;
          served: boolean;
          storage: boolean;
          subresources?: { status?: object };
          schema: {
            openAPIV3Schema: {
              properties: Record<string, { properties?: Record<string, unknown> }>;
            };
          };
        }[];
      };
      const watched = KUBERNETES_SOURCE_RESOURCES.find((r) => r.kind === "ServiceExport");
      expect(crd?.kind).toBe("CustomResourceDefinition");
      expect(crd?.metadata.name).toBe(`${watched?.plural}.${watched?.group}`);
      expect({
        group: spec.group,
        scope: spec.scope,
        kind: spec.names.kind,
        plural: spec.names.plural,
      }).toEqual({
        group: watched?.group,
        scope: "Namespaced",
        kind: "ServiceExport",
        plural: watched?.plural,
      });
      const version = spec.versions.find((v) => v.name === watched?.version);
      expect(version?.served).toBe(true);
      expect(version?.storage).toBe(true);
      expect(version?.subresources?.status).toEqual({});
      const status = version?.schema.openAPIV3Schema.properties.status;
      expect(Object.keys(status?.properties ?? {})).toEqual(["conditions"]);
    });
  });
});
