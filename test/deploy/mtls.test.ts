/**
 * deploy/components/mtls and its SVID source mtls-spiffe (the SPIFFE CSI
 * driver and spiffe-helper), rendered with `kubectl kustomize` in
 * examples/hub-mtls and examples/spoke-east-mtls: the rendered args are
 * given to the real flag parsers of the registrar, the agent and aetherctl
 * (what the programs would accept or refuse at start), every file a flag
 * names lies in a volume the container mounts, the registrar admits exactly
 * its cluster's agents and registrars and the federation's registrars, the
 * agents verify the registrar's SPIFFE ID, probes stay on the plain-HTTP
 * ports, and spiffe-helper's configuration writes where the flags read.
 *
 * Skipped, loudly (by kustomize.test.ts), only when kubectl is not installed.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, posix } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseAetherctlFlags } from "../../clients/aetherctl/aetherctl-flags.js";
import { type AgentConfig, parseAgentFlags } from "../../clients/agent/agent-flags.js";
import { isAuthorized } from "../../services/common/spiffe-authorize.js";
import { parseSpiffeId, type SpiffeId } from "../../services/common/spiffe-id.js";
import {
  parseRegistrarFlags,
  type RegistrarConfig,
} from "../../services/registrar/registrar-flags.js";
import {
  type Container,
  effectiveArgs,
  find,
  flagValue,
  hasKubectl,
  type KubeObject,
  type PodSpec,
  render,
  type Workload,
  workload,
} from "./rendered-manifests.js";
import {
  type HelperValue,
  parseHelperConf,
  SPIFFE_HELPER_HEALTH_KEYS,
  SPIFFE_HELPER_KEYS,
} from "./spiffe-helper-conf.js";

const HUB_MTLS = "deploy/examples/hub-mtls";
const EAST_MTLS = "deploy/examples/spoke-east-mtls";
/** The same spoke without mTLS: what the component must leave as it was. */
const EAST = "deploy/examples/spoke-east";
const MTLS = [HUB_MTLS, EAST_MTLS];
/** Each example's own trust domain and the federated ones whose registrars it admits. */
const TRUST: Record<string, { own: string; federated: string[] }> = {
  [HUB_MTLS]: { own: "hub.mesh", federated: ["east.mesh", "west.mesh"] },
  [EAST_MTLS]: { own: "east.mesh", federated: ["hub.mesh"] },
};
/** What the operator's ConfigMap aether-etcd gives (not in the rendering). */
const OPERATOR_ENV = new Map([["AETHER_ETCD_ENDPOINTS", "https://etcd.example.com:2379"]]);

/** The SPIFFE ID SPIRE's default template (and csi-driver-spiffe) gives a workload's pods. */
function podId(trustDomain: string, w: Workload): string {
  return `spiffe://${trustDomain}/ns/${w.object.metadata.namespace}/sa/${w.pod.serviceAccountName}`;
}

function spiffeId(text: string): SpiffeId {
  const parsed = parseSpiffeId(text);
  if (parsed.error !== undefined) throw new Error(parsed.error);
  return parsed.id;
}

/** The mount of `container` whose directory holds `path`, and its volume. */
function mountHolding(pod: PodSpec, container: Container, path: string) {
  const mount = (container.volumeMounts ?? []).find((m) => m.mountPath === dirname(path));
  const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  return { mount, volume };
}

describe.skipIf(!hasKubectl)("deploy/ mutual TLS (components/mtls, mtls-spiffe)", () => {
  const rendered = new Map<string, KubeObject[]>();
  const objectsOf = (dir: string): KubeObject[] => rendered.get(dir) ?? [];
  const scratch = mkdtempSync(join(tmpdir(), "aether-deploy-mtls-"));
  /** A page-token key for parseRegistrarFlags, which reads --page-token-key-file. */
  const pageTokenKey = join(scratch, "page-token-key");

  beforeAll(async () => {
    writeFileSync(pageTokenKey, "a-test-page-token-key-of-enough-bytes\n");
    await Promise.all(
      [...MTLS, EAST].map(async (dir) => {
        rendered.set(dir, await render(dir));
      }),
    );
  }, 60_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  /** The registrar's container, its effective args and what parseRegistrarFlags makes of them. */
  const registrarOf = (dir: string) => {
    const objects = objectsOf(dir);
    const w = workload(objects, "Deployment", "aether-registrar");
    const container = w.pod.containers[0] as Container;
    const args = effectiveArgs(container, objects, OPERATOR_ENV);
    const keyFile = flagValue(args, "page-token-key-file");
    const config = parseRegistrarFlags(
      args.map((a) =>
        a === `--page-token-key-file=${keyFile}` ? `--page-token-key-file=${pageTokenKey}` : a,
      ),
    ) as RegistrarConfig;
    return { objects, w, container, args, config };
  };

  /** The agent's container, its effective args and what parseAgentFlags makes of them. */
  const agentOf = (dir: string) => {
    const objects = objectsOf(dir);
    const w = workload(objects, "DaemonSet", "aether-agent");
    const container = w.pod.containers[0] as Container;
    const args = effectiveArgs(container, objects);
    return { objects, w, container, args, config: parseAgentFlags(args) as AgentConfig };
  };

  describe("the registrar", () => {
    it.each(MTLS)(
      "%s: serves TLS with its SVID and requires client SVIDs of its own and the federated trust domains",
      (dir) => {
        const { w, container, config } = registrarOf(dir);
        const tls = config.tls;
        expect(tls).toBeDefined();
        for (const file of [tls?.certFile, tls?.keyFile] as string[]) {
          const { mount, volume } = mountHolding(w.pod, container, file);
          expect(mount?.name, file).toBe("svid");
          expect(mount?.readOnly, file).toBe(true);
          expect(volume, file).toBeDefined();
        }
        const { own, federated } = TRUST[dir] as { own: string; federated: string[] };
        expect([...(tls?.bundleFiles.keys() ?? [])].sort()).toEqual([own, ...federated].sort());
        expect(dirname(tls?.bundleFiles.get(own) ?? "")).toBe(dirname(tls?.certFile ?? "?"));
        for (const trustDomain of federated) {
          const file = tls?.bundleFiles.get(trustDomain) ?? "";
          const { mount, volume } = mountHolding(w.pod, container, file);
          expect(mount?.readOnly, file).toBe(true);
          expect(volume?.configMap?.name, file).toBe("aether-federated-bundles");
          expect(posix.basename(file)).toBe(`${trustDomain}.json`);
        }
      },
    );

    it.each(MTLS)(
      "%s: admits this cluster's agents and registrars and the federation's registrars, nobody else",
      (dir) => {
        const { w, config } = registrarOf(dir);
        const { own, federated } = TRUST[dir] as { own: string; federated: string[] };
        const patterns = config.tls?.authorize ?? [];
        const agentAccount = find(objectsOf(EAST_MTLS), "ServiceAccount", "aether-agent");
        const agent = `spiffe://${own}/ns/${w.object.metadata.namespace}/sa/${agentAccount.metadata.name}`;
        const admitted = [agent, podId(own, w), ...federated.map((td) => podId(td, w))];
        for (const id of admitted) expect(isAuthorized(spiffeId(id), patterns), id).toBe(true);
        const refused = [
          `spiffe://${own}/ns/${w.object.metadata.namespace}/sa/default`,
          `spiffe://${own}/ns/shop/sa/aether-agent`,
          ...federated.map((td) => `spiffe://${td}/ns/aether-system/sa/aether-agent`),
        ];
        for (const id of refused) expect(isAuthorized(spiffeId(id), patterns), id).toBe(false);
      },
    );

    it.each(MTLS)(
      "%s: probes stay on the plain-HTTP admin port, apart from the TLS port",
      (dir) => {
        const { container, config } = registrarOf(dir);
        const admin = container.ports?.find((p) => p.containerPort === config.adminListen?.port);
        expect(admin?.name).toBe("admin");
        expect(config.adminListen?.port).not.toBe(config.port);
        for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"] as const) {
          expect(container[probe]?.httpGet?.port, probe).toBe(admin?.name);
          expect(container[probe]?.httpGet?.scheme ?? "HTTP", probe).toBe("HTTP");
        }
      },
    );

    it.each(MTLS)(
      "%s: aetherctl in the registrar's pod reaches it with the registrar's own SVID",
      (dir) => {
        const { w, config } = registrarOf(dir);
        const own = (TRUST[dir] as { own: string }).own;
        const tls = config.tls;
        const line = parseAetherctlFlags([
          `--registrar=https://127.0.0.1:${config.port}`,
          `--tls-cert-file=${tls?.certFile}`,
          `--tls-key-file=${tls?.keyFile}`,
          `--trust-domain-bundle=${own}=${tls?.bundleFiles.get(own)}`,
          `--registrar-spiffe-id=${podId(own, w)}`,
          "status",
        ]);
        expect(line.kind).toBe("run");
        expect(isAuthorized(spiffeId(podId(own, w)), tls?.authorize ?? [])).toBe(true);
      },
    );
  });

  describe("the agents", () => {
    it(`${EAST_MTLS}: follow the registrar Service over https, verifying its SPIFFE ID, with their SVID`, () => {
      const { objects, w, container, config } = agentOf(EAST_MTLS);
      const registrar = registrarOf(EAST_MTLS);
      const url = new URL(config.registrar);
      expect(url.protocol).toBe("https:");
      const service = find(objects, "Service", url.hostname);
      const ports = (service.spec as { ports: { port: number; targetPort: string }[] }).ports;
      const port = ports.find((p) => p.port === Number(url.port));
      const target = registrar.container.ports?.find((p) => p.name === port?.targetPort);
      expect(target?.containerPort).toBe(registrar.config.port);
      expect(config.tls?.registrarSpiffeId).toBe(podId("east.mesh", registrar.w));
      expect([...(config.tls?.bundleFiles.keys() ?? [])]).toEqual(["east.mesh"]);
      expect(config.tls?.bundleFiles.get("east.mesh")).toBe(
        registrar.config.tls?.bundleFiles.get("east.mesh"),
      );
      for (const file of [config.tls?.certFile, config.tls?.keyFile] as string[]) {
        const { mount, volume } = mountHolding(w.pod, container, file);
        expect(mount?.name, file).toBe("svid");
        expect(mount?.readOnly, file).toBe(true);
        expect(volume?.emptyDir, file).toBeDefined();
      }
      expect(
        isAuthorized(spiffeId(podId("east.mesh", w)), registrar.config.tls?.authorize ?? []),
      ).toBe(true);
    });

    it(`${EAST_MTLS}: probes stay on the agent's plain-HTTP --listen port; other args as without mTLS`, () => {
      const { container, config, args } = agentOf(EAST_MTLS);
      const listen = container.ports?.find((p) => p.containerPort === config.listen.port);
      for (const probe of ["startupProbe", "livenessProbe", "readinessProbe"] as const) {
        expect(container[probe]?.httpGet?.port, probe).toBe(listen?.name);
        expect(container[probe]?.httpGet?.scheme ?? "HTTP", probe).toBe("HTTP");
      }
      const plain = agentOf(EAST);
      expect(plain.config.tls).toBeUndefined();
      const tlsFlags =
        /^--(registrar|tls-cert-file|tls-key-file|trust-domain-bundle|registrar-spiffe-id)=/;
      expect(args.filter((a) => !tlsFlags.test(a))).toEqual(
        plain.args.filter((a) => !tlsFlags.test(a)),
      );
      expect(container.ports).toEqual((plain.container as Container).ports);
    });
  });

  describe("spiffe-helper", () => {
    /** The helper sidecar of a workload, its configuration and the volume its config comes from. */
    const helperOf = (objects: readonly KubeObject[], w: Workload) => {
      const sidecars = (w.pod.initContainers ?? []).filter((c) => c.name === "spiffe-helper");
      expect(sidecars).toHaveLength(1);
      const helper = sidecars[0] as Container;
      const configPath = (helper.args ?? [])[(helper.args ?? []).indexOf("-config") + 1] ?? "";
      const { mount, volume } = mountHolding(w.pod, helper, configPath);
      expect(mount?.readOnly).toBe(true);
      const configMap = find(objects, "ConfigMap", volume?.configMap?.name ?? "");
      const text = (configMap.data as Record<string, string>)[posix.basename(configPath)];
      return { helper, conf: parseHelperConf(text ?? "") };
    };

    const workloadsOf = (dir: string) =>
      dir === HUB_MTLS
        ? [registrarOf(dir)]
        : [registrarOf(dir), { ...agentOf(dir), config: undefined }];

    it.each(MTLS)("%s: its configuration has only keys v0.11.0 knows", (dir) => {
      for (const { objects, w } of workloadsOf(dir)) {
        const { conf } = helperOf(objects, w);
        expect(Object.keys(conf).filter((k) => !SPIFFE_HELPER_KEYS.has(k))).toEqual([]);
        const health = conf.health_checks as Record<string, HelperValue>;
        expect(Object.keys(health).filter((k) => !SPIFFE_HELPER_HEALTH_KEYS.has(k))).toEqual([]);
      }
    });

    it.each(MTLS)(
      "%s: writes the SVID, key and own bundle (only) where the aether container's flags read them",
      (dir) => {
        for (const { objects, w, container, args } of workloadsOf(dir)) {
          const { helper, conf } = helperOf(objects, w);
          const certDir = conf.cert_dir as string;
          const written = helper.volumeMounts?.find((m) => m.mountPath === certDir);
          expect(written?.readOnly).not.toBe(true);
          const read = container.volumeMounts?.find((m) => m.name === written?.name);
          expect(read?.mountPath).toBe(certDir);
          const own = (TRUST[dir] as { own: string }).own;
          expect(flagValue(args, "tls-cert-file")).toBe(
            posix.join(certDir, conf.svid_file_name as string),
          );
          expect(flagValue(args, "tls-key-file")).toBe(
            posix.join(certDir, conf.svid_key_file_name as string),
          );
          expect(args).toContain(
            `--trust-domain-bundle=${own}=${posix.join(certDir, conf.svid_bundle_file_name as string)}`,
          );
          expect(conf.include_federated_domains).toBe(false);
          expect(conf.daemon_mode).toBe(true);
          for (const unwanted of ["cmd", "pid_file_name", "renew_signal"]) {
            expect(conf[unwanted], unwanted).toBeUndefined();
          }
          const volume = w.pod.volumes?.find((v) => v.name === written?.name);
          expect(volume?.emptyDir).toEqual({ medium: "Memory", sizeLimit: "1Mi" });
        }
      },
    );

    it.each(MTLS)(
      "%s: reads the Workload API socket from a read-only csi.spiffe.io volume",
      (dir) => {
        for (const { objects, w } of workloadsOf(dir)) {
          const { helper, conf } = helperOf(objects, w);
          const { mount, volume } = mountHolding(w.pod, helper, conf.agent_address as string);
          expect(mount?.readOnly).toBe(true);
          expect(volume?.csi).toEqual({ driver: "csi.spiffe.io", readOnly: true });
          const aether = w.pod.containers.flatMap((c) => c.volumeMounts ?? []);
          expect(aether.map((m) => m.name)).not.toContain(volume?.name);
        }
      },
    );

    it.each(MTLS)(
      "%s: runs as a native sidecar whose startup probe waits for the files, on a port of its own",
      (dir) => {
        for (const { objects, w } of workloadsOf(dir)) {
          const { helper, conf } = helperOf(objects, w);
          const health = conf.health_checks as Record<string, HelperValue>;
          expect(helper.restartPolicy).toBe("Always");
          expect(health.listener_enabled).toBe(true);
          const port = helper.ports?.find((p) => p.containerPort === health.bind_port);
          expect(helper.startupProbe?.httpGet).toEqual({
            path: health.readiness_path,
            port: port?.name,
          });
          expect(helper.livenessProbe?.httpGet).toEqual({
            path: health.liveness_path,
            port: port?.name,
          });
          const others = w.pod.containers.flatMap((c) =>
            (c.ports ?? []).map((p) => p.containerPort),
          );
          expect(others).not.toContain(health.bind_port);
        }
      },
    );
  });
});
