/**
 * deploy/components/mtls, rendered with `kubectl kustomize` in the mTLS
 * examples (SVIDs from spiffe-helper or from csi-driver-spiffe): the rendered
 * args are given to the real flag parsers of the registrar, the agent and
 * aetherctl (what the programs accept at start), every file a flag names
 * lies in a volume the container mounts, the registrar admits exactly its
 * cluster's agents and registrars and the federation's registrars, the
 * agents verify the registrar's SPIFFE ID, probes stay on the plain-HTTP
 * ports, and the NetworkPolicies are those of the plain install. aetherctl
 * run in the registrar's or an agent's pod with no flags gets, from the
 * pod's environment through its real parser, the pod's SVID files and the
 * registrar's URL and SPIFFE ID.
 * (mtls-svid-sources.test.ts checks where the SVID files come from.)
 *
 * Skipped, loudly (by kustomize.test.ts), only when kubectl is not installed.
 */
import { posix } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type GlobalOptions,
  parseAetherctlFlags,
} from "../../clients/aetherctl/aetherctl-flags.js";
import { CLIENT_TLS_ENV } from "../../clients/aetherctl/tls-env.js";
import { isAuthorized } from "../../services/common/spiffe-authorize.js";
import type { ClientTlsConfig } from "../../services/process/client-tls-flags.js";
import {
  execEnv,
  MTLS,
  MTLS_SPOKES,
  MtlsRenderings,
  mountHolding,
  PLAIN,
  podId,
  spiffeId,
  TRUST,
} from "./mtls-renderings.js";
import {
  type Container,
  find,
  hasKubectl,
  type KubeObject,
  ofKind,
  type PodSpec,
} from "./rendered-manifests.js";

const PROBES = ["startupProbe", "livenessProbe", "readinessProbe"] as const;

/** What `kubectl exec … -- aetherctl status` in `container` runs with: no flags, the pod's environment. */
function aetherctlInPod(container: Container, objects: readonly KubeObject[]): GlobalOptions {
  const env = execEnv(container, objects);
  for (const variable of Object.values(CLIENT_TLS_ENV))
    expect(env[variable], variable).toBeDefined();
  const line = parseAetherctlFlags(["status"], env);
  if (line.kind !== "run") throw new Error("aetherctl status asked for help");
  return line.global;
}

/** The certificate, key and bundle files aetherctl would read: in the pod's read-only `svid` mount. */
function expectSvidFiles(pod: PodSpec, container: Container, tls: ClientTlsConfig | undefined) {
  const files = [tls?.certFile, tls?.keyFile, ...(tls?.bundleFiles.values() ?? [])];
  expect(files).toHaveLength(3);
  for (const file of files as string[]) {
    const { mount, volume } = mountHolding(pod, container, file);
    expect(mount?.name, file).toBe("svid");
    expect(mount?.readOnly, file).toBe(true);
    expect(volume, file).toBeDefined();
  }
}

describe.skipIf(!hasKubectl)("deploy/ mutual TLS (components/mtls)", () => {
  const r = new MtlsRenderings();
  beforeAll(() => r.renderAll(), 60_000);
  afterAll(() => r.dispose());

  describe("the registrar", () => {
    it.each(MTLS)(
      "%s: serves TLS with its SVID and requires client SVIDs of its own and the federated trust domains",
      (dir) => {
        const { w, container, config } = r.registrarOf(dir);
        const tls = config.tls;
        expect(tls).toBeDefined();
        const { own, federated } = TRUST[dir] as { own: string; federated: string[] };
        expect([...(tls?.bundleFiles.keys() ?? [])].sort()).toEqual([own, ...federated].sort());
        for (const file of [tls?.certFile, tls?.keyFile, tls?.bundleFiles.get(own)] as string[]) {
          const { mount, volume } = mountHolding(w.pod, container, file);
          expect(mount?.name, file).toBe("svid");
          expect(mount?.readOnly, file).toBe(true);
          expect(volume, file).toBeDefined();
        }
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
        const { w, config } = r.registrarOf(dir);
        const { own, federated } = TRUST[dir] as { own: string; federated: string[] };
        const patterns = config.tls?.authorize ?? [];
        const ns = w.object.metadata.namespace;
        const agentAccount = find(
          r.objectsOf(MTLS_SPOKES[0] as string),
          "ServiceAccount",
          "aether-agent",
        );
        const admitted = [
          `spiffe://${own}/ns/${ns}/sa/${agentAccount.metadata.name}`,
          podId(own, w),
          ...federated.map((td) => podId(td, w)),
        ];
        for (const id of admitted) expect(isAuthorized(spiffeId(id), patterns), id).toBe(true);
        const refused = [
          `spiffe://${own}/ns/${ns}/sa/default`,
          `spiffe://${own}/ns/shop/sa/aether-agent`,
          ...federated.map((td) => `spiffe://${td}/ns/${ns}/sa/aether-agent`),
        ];
        for (const id of refused) expect(isAuthorized(spiffeId(id), patterns), id).toBe(false);
      },
    );

    it.each(MTLS)(
      "%s: probes stay on the plain-HTTP admin port, apart from the TLS port",
      (dir) => {
        const { container, config } = r.registrarOf(dir);
        const admin = container.ports?.find((p) => p.containerPort === config.adminListen?.port);
        expect(admin?.name).toBe("admin");
        expect(config.adminListen?.port).not.toBe(config.port);
        for (const probe of PROBES) {
          expect(container[probe]?.httpGet?.port, probe).toBe(admin?.name);
          expect(container[probe]?.httpGet?.scheme ?? "HTTP", probe).toBe("HTTP");
        }
      },
    );

    it.each(MTLS)(
      "%s: aetherctl in the registrar's pod reaches it with the pod's SVID from the environment alone",
      (dir) => {
        const { objects, w, container, config } = r.registrarOf(dir);
        const own = (TRUST[dir] as { own: string }).own;
        const global = aetherctlInPod(container, objects);
        expect(global.registrar).toBe(`https://127.0.0.1:${config.port}`);
        const bundle = config.tls?.bundleFiles.get(own) as string;
        expect(global.tls).toEqual({
          certFile: config.tls?.certFile,
          keyFile: config.tls?.keyFile,
          bundleFiles: new Map([[own, bundle]]),
          registrarSpiffeId: podId(own, w),
        });
        expectSvidFiles(w.pod, container, global.tls);
        expect(isAuthorized(spiffeId(podId(own, w)), config.tls?.authorize ?? [])).toBe(true);
      },
    );
  });

  describe("the agents", () => {
    it.each(MTLS_SPOKES)(
      "%s: follow the registrar Service over https with their SVID, verifying the registrar's SPIFFE ID",
      (dir) => {
        const { objects, w, container, config } = r.agentOf(dir);
        const registrar = r.registrarOf(dir);
        const own = (TRUST[dir] as { own: string }).own;
        const url = new URL(config.registrar);
        expect(url.protocol).toBe("https:");
        const service = find(objects, "Service", url.hostname);
        const ports = (service.spec as { ports: { port: number; targetPort: string }[] }).ports;
        const port = ports.find((p) => p.port === Number(url.port));
        const target = registrar.container.ports?.find((p) => p.name === port?.targetPort);
        expect(target?.containerPort).toBe(registrar.config.port);
        expect(config.tls?.registrarSpiffeId).toBe(podId(own, registrar.w));
        expect([...(config.tls?.bundleFiles.keys() ?? [])]).toEqual([own]);
        expect(config.tls?.bundleFiles.get(own)).toBe(registrar.config.tls?.bundleFiles.get(own));
        for (const file of [config.tls?.certFile, config.tls?.keyFile] as string[]) {
          const { mount } = mountHolding(w.pod, container, file);
          expect(mount?.name, file).toBe("svid");
          expect(mount?.readOnly, file).toBe(true);
        }
        const authorize = registrar.config.tls?.authorize ?? [];
        expect(isAuthorized(spiffeId(podId(own, w)), authorize)).toBe(true);
      },
    );

    it.each(MTLS_SPOKES)(
      "%s: aetherctl in an agent's pod calls the registrar as the agent does, from the environment alone",
      (dir) => {
        const { objects, w, container, config } = r.agentOf(dir);
        const global = aetherctlInPod(container, objects);
        expect(global.registrar).toBe(config.registrar);
        expect(global.tls).toEqual(config.tls);
        expectSvidFiles(w.pod, container, global.tls);
      },
    );

    it.each(MTLS_SPOKES)(
      "%s: probes stay on the agent's plain-HTTP port; its other args and ports are as without mTLS",
      (dir) => {
        const { container, config, args } = r.agentOf(dir);
        const listen = container.ports?.find((p) => p.containerPort === config.listen.port);
        for (const probe of PROBES) {
          expect(container[probe]?.httpGet?.port, probe).toBe(listen?.name);
          expect(container[probe]?.httpGet?.scheme ?? "HTTP", probe).toBe("HTTP");
        }
        const plain = r.agentOf(PLAIN[dir] as string);
        expect(plain.config.tls).toBeUndefined();
        const tls =
          /^--(registrar|tls-cert-file|tls-key-file|trust-domain-bundle|registrar-spiffe-id)=/;
        const others = (all: readonly string[]) => all.filter((a) => !tls.test(a));
        expect(others(args)).toEqual(others(plain.args));
        expect(container.ports).toEqual((plain.container as Container).ports);
      },
    );
  });

  it.each(MTLS_SPOKES)(
    "%s: the NetworkPolicies are the plain install's (TLS on the same ports, nothing more opened)",
    (dir) => {
      const policies = (d: string) =>
        ofKind(r.objectsOf(d), "NetworkPolicy").map((p) => ({
          name: p.metadata.name,
          spec: p.spec,
        }));
      expect(policies(dir)).toEqual(policies(PLAIN[dir] as string));
      const { container, config } = r.registrarOf(dir);
      const api = container.ports?.find((p) => p.containerPort === config.port);
      const registrarPolicy = find(r.objectsOf(dir), "NetworkPolicy", "aether-registrar");
      const rules = (registrarPolicy.spec as { ingress: { ports: { port: string }[] }[] }).ingress;
      expect(rules.flatMap((rule) => rule.ports.map((p) => p.port))).toContain(api?.name);
    },
  );
});
