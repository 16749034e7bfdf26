/**
 * Where the SVID files the mTLS flags read come from, in the rendered mTLS
 * examples: spiffe-helper (components/mtls-spiffe) writes them where the
 * flags read, from the Workload API socket of a csi.spiffe.io volume, as a
 * native sidecar whose startup probe holds the aether container back until
 * they exist; or cert-manager's csi-driver-spiffe (components/mtls-cert-manager)
 * writes them into the volume itself, readable by the pods' group, after a
 * request the pod's ServiceAccount may make and nothing more.
 *
 * Skipped, loudly (by kustomize.test.ts), only when kubectl is not installed.
 */
import { posix } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CERT_MANAGER_SOURCED,
  MtlsRenderings,
  mountHolding,
  SPIFFE_HELPER_SOURCED,
  TRUST,
} from "./mtls-renderings.js";
import {
  type Container,
  find,
  flagValue,
  hasKubectl,
  type KubeObject,
  ofKind,
  type Workload,
} from "./rendered-manifests.js";
import {
  type HelperValue,
  parseHelperConf,
  SPIFFE_HELPER_HEALTH_KEYS,
  SPIFFE_HELPER_KEYS,
} from "./spiffe-helper-conf.js";

/** The spiffe-helper sidecar of a workload and its parsed configuration. */
function helperOf(objects: readonly KubeObject[], w: Workload) {
  const sidecars = (w.pod.initContainers ?? []).filter((c) => c.name === "spiffe-helper");
  expect(sidecars).toHaveLength(1);
  const helper = sidecars[0] as Container;
  const args = helper.args ?? [];
  const configPath = args[args.indexOf("-config") + 1] ?? "";
  const { mount, volume } = mountHolding(w.pod, helper, configPath);
  expect(mount?.readOnly).toBe(true);
  const configMap = find(objects, "ConfigMap", volume?.configMap?.name ?? "");
  const text = (configMap.data as Record<string, string>)[posix.basename(configPath)];
  expect(text, configPath).toBeDefined();
  const conf = parseHelperConf(text ?? "");
  return { helper, conf, health: conf.health_checks as Record<string, HelperValue> };
}

describe.skipIf(!hasKubectl)("deploy/ mutual TLS: where the SVIDs come from", () => {
  const r = new MtlsRenderings();
  beforeAll(() => r.renderAll(), 60_000);
  afterAll(() => r.dispose());

  describe("spiffe-helper (components/mtls-spiffe)", () => {
    it.each(SPIFFE_HELPER_SOURCED)("%s: its configuration has only keys v0.11.0 knows", (dir) => {
      for (const { objects, w } of r.svidWorkloadsOf(dir)) {
        const { conf, health } = helperOf(objects, w);
        expect(Object.keys(conf).filter((k) => !SPIFFE_HELPER_KEYS.has(k))).toEqual([]);
        expect(Object.keys(health).filter((k) => !SPIFFE_HELPER_HEALTH_KEYS.has(k))).toEqual([]);
      }
    });

    it.each(SPIFFE_HELPER_SOURCED)(
      "%s: writes the SVID, key and own bundle (only) where the aether container's flags read them",
      (dir) => {
        for (const { objects, w, container, args } of r.svidWorkloadsOf(dir)) {
          const { helper, conf } = helperOf(objects, w);
          const certDir = conf.cert_dir as string;
          const written = helper.volumeMounts?.find((m) => m.mountPath === certDir);
          expect(written?.readOnly).not.toBe(true);
          const read = container.volumeMounts?.find((m) => m.name === written?.name);
          expect(read?.mountPath).toBe(certDir);
          const file = (key: string) => posix.join(certDir, conf[key] as string);
          expect(flagValue(args, "tls-cert-file")).toBe(file("svid_file_name"));
          expect(flagValue(args, "tls-key-file")).toBe(file("svid_key_file_name"));
          const own = (TRUST[dir] as { own: string }).own;
          expect(args).toContain(`--trust-domain-bundle=${own}=${file("svid_bundle_file_name")}`);
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

    it.each(SPIFFE_HELPER_SOURCED)(
      "%s: reads the Workload API socket from a read-only csi.spiffe.io volume the aether container does not mount",
      (dir) => {
        for (const { objects, w } of r.svidWorkloadsOf(dir)) {
          const { helper, conf } = helperOf(objects, w);
          const { mount, volume } = mountHolding(w.pod, helper, conf.agent_address as string);
          expect(mount?.readOnly).toBe(true);
          expect(volume?.csi).toEqual({ driver: "csi.spiffe.io", readOnly: true });
          const aether = w.pod.containers.flatMap((c) => c.volumeMounts ?? []);
          expect(aether.map((m) => m.name)).not.toContain(volume?.name);
        }
      },
    );

    it.each(SPIFFE_HELPER_SOURCED)(
      "%s: runs as a native sidecar whose startup probe waits for the files, on a port of its own",
      (dir) => {
        for (const { objects, w } of r.svidWorkloadsOf(dir)) {
          const { helper, health } = helperOf(objects, w);
          expect(helper.restartPolicy).toBe("Always");
          expect(health.listener_enabled).toBe(true);
          const port = helper.ports?.find((p) => p.containerPort === health.bind_port);
          const ready = { path: health.readiness_path, port: port?.name };
          expect(helper.startupProbe?.httpGet).toEqual(ready);
          const live = { path: health.liveness_path, port: port?.name };
          expect(helper.livenessProbe?.httpGet).toEqual(live);
          const taken = w.pod.containers.flatMap((c) =>
            (c.ports ?? []).map((p) => p.containerPort),
          );
          expect(taken).not.toContain(health.bind_port);
        }
      },
    );
  });

  describe("csi-driver-spiffe (components/mtls-cert-manager)", () => {
    it.each(CERT_MANAGER_SOURCED)(
      "%s: the driver's volume holds the files the flags read, under its default names, readable by the pods' group",
      (dir) => {
        for (const { w, container, args } of r.svidWorkloadsOf(dir)) {
          expect(w.pod.initContainers ?? []).toEqual([]);
          const { mount, volume } = mountHolding(
            w.pod,
            container,
            flagValue(args, "tls-cert-file"),
          );
          expect(mount?.readOnly).toBe(true);
          expect(volume?.csi?.driver).toBe("spiffe.csi.cert-manager.io");
          expect(volume?.csi?.readOnly).toBe(true);
          const group = volume?.csi?.volumeAttributes?.["spiffe.csi.cert-manager.io/fs-group"];
          const podGroup = (w.pod.securityContext as { runAsGroup?: number }).runAsGroup;
          expect(group).toBe(String(podGroup));
          const own = (TRUST[dir] as { own: string }).own;
          const dirOf = mount?.mountPath ?? "?";
          expect(flagValue(args, "tls-cert-file")).toBe(posix.join(dirOf, "tls.crt"));
          expect(flagValue(args, "tls-key-file")).toBe(posix.join(dirOf, "tls.key"));
          expect(args).toContain(`--trust-domain-bundle=${own}=${posix.join(dirOf, "ca.crt")}`);
        }
      },
    );

    it.each(CERT_MANAGER_SOURCED)(
      "%s: each pod's ServiceAccount may create CertificateRequests and nothing else, without a mounted token",
      (dir) => {
        const objects = r.objectsOf(dir);
        const role = find(objects, "Role", "aether-svid-requests");
        expect(role.rules).toEqual([
          { apiGroups: ["cert-manager.io"], resources: ["certificaterequests"], verbs: ["create"] },
        ]);
        const bound = ofKind(objects, "RoleBinding")
          .filter((b) => (b.roleRef as { name: string }).name === role.metadata.name)
          .flatMap((b) => b.subjects as { name: string; namespace: string }[]);
        for (const { w } of r.svidWorkloadsOf(dir)) {
          expect(bound).toContainEqual({
            kind: "ServiceAccount",
            name: w.pod.serviceAccountName,
            namespace: w.object.metadata.namespace,
          });
        }
        // A token only where the registrar reads local routes (components/agent-local-routes).
        const { w } = r.registrarOf(dir);
        const args = (w.pod.containers?.[0]?.args ?? []) as string[];
        expect(w.pod.automountServiceAccountToken).toBe(args.includes("--local-source=kubernetes"));
      },
    );
  });
});
