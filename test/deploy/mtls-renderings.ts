/**
 * The mutual-TLS renderings of deploy/ (examples/hub-mtls and
 * spoke-east-mtls with components/mtls-spiffe, spoke-west-mtls with
 * components/mtls-cert-manager) and what the tests ask of them: the
 * registrar's and the agent's rendered args as the real flag parsers read
 * them, the SPIFFE IDs the pods get, the volume behind a file a flag names.
 */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { parseSpiffeId, type SpiffeId } from "../../services/common/spiffe-id.js";
import { parsedAgent, parsedRegistrar } from "./parsed-workloads.js";
import {
  type Container,
  containerEnv,
  type KubeObject,
  type PodSpec,
  render,
  type Workload,
} from "./rendered-manifests.js";

export const HUB_MTLS = "deploy/examples/hub-mtls";
export const EAST_MTLS = "deploy/examples/spoke-east-mtls";
export const WEST_MTLS = "deploy/examples/spoke-west-mtls";
/** The spokes they build on, without mTLS: what the components must leave as it was. */
export const PLAIN: Readonly<Record<string, string>> = {
  [EAST_MTLS]: "deploy/examples/spoke-east",
  [WEST_MTLS]: "deploy/examples/spoke-west",
};
/** SVIDs from SPIRE through spiffe-helper (components/mtls-spiffe). */
export const SPIFFE_HELPER_SOURCED = [HUB_MTLS, EAST_MTLS];
/** SVIDs from cert-manager's csi-driver-spiffe (components/mtls-cert-manager). */
export const CERT_MANAGER_SOURCED = [WEST_MTLS];
export const MTLS = [...SPIFFE_HELPER_SOURCED, ...CERT_MANAGER_SOURCED];
export const MTLS_SPOKES = [EAST_MTLS, WEST_MTLS];

/** Each example's own trust domain and the federated ones whose registrars it admits. */
export const TRUST: Readonly<Record<string, { own: string; federated: readonly string[] }>> = {
  [HUB_MTLS]: { own: "hub.mesh", federated: ["east.mesh", "west.mesh"] },
  [EAST_MTLS]: { own: "east.mesh", federated: ["hub.mesh"] },
  [WEST_MTLS]: { own: "west.mesh", federated: ["hub.mesh"] },
};

/** What the operator's ConfigMap aether-etcd gives (it is not in the rendering). */
const OPERATOR_ENV = new Map([["AETHER_ETCD_ENDPOINTS", "https://etcd.example.com:2379"]]);

/** The SPIFFE ID SPIRE's default template and csi-driver-spiffe give a workload's pods. */
export function podId(trustDomain: string, w: Workload): string {
  return `spiffe://${trustDomain}/ns/${w.object.metadata.namespace}/sa/${w.pod.serviceAccountName}`;
}

/** Parses a SPIFFE ID the test wrote; throws when it is not one. */
export function spiffeId(text: string): SpiffeId {
  const parsed = parseSpiffeId(text);
  if (parsed.error !== undefined) throw new Error(parsed.error);
  return parsed.id;
}

/**
 * The container's environment as the kubelet gives it to a process started
 * in it (`kubectl exec`): {@link containerEnv}'s values with `$(VAR)`
 * expanded from the variables defined EARLIER in the list (`$$` escapes; a
 * later or unknown one stays as written, as Kubernetes leaves it).
 */
export function execEnv(
  container: Container,
  objects: readonly KubeObject[],
  provided: ReadonlyMap<string, string> = OPERATOR_ENV,
): Record<string, string> {
  const values = containerEnv(container, objects, provided);
  const env: Record<string, string> = {};
  for (const { name } of container.env ?? []) {
    const value = values.get(name);
    if (value === undefined) continue;
    env[name] = value.replace(/\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (all, ref?: string) =>
      ref === undefined ? "$" : (env[ref] ?? all),
    );
  }
  return env;
}

/** The mount of `container` at the directory of `path`, and its volume. */
export function mountHolding(pod: PodSpec, container: Container, path: string) {
  const mount = (container.volumeMounts ?? []).find((m) => m.mountPath === dirname(path));
  const volume = (pod.volumes ?? []).find((v) => v.name === mount?.name);
  return { mount, volume };
}

/**
 * The renderings of {@link MTLS} and their plain counterparts, rendered by
 * {@link MtlsRenderings.renderAll} (in beforeAll) and read by the tests.
 */
export class MtlsRenderings {
  private readonly rendered = new Map<string, KubeObject[]>();
  private readonly scratch = mkdtempSync(join(tmpdir(), "aether-deploy-mtls-"));
  /** A page-token key for parseRegistrarFlags, which reads --page-token-key-file at once. */
  private readonly pageTokenKey = join(this.scratch, "page-token-key");

  /** Renders every mTLS example and its plain counterpart. */
  async renderAll(): Promise<void> {
    writeFileSync(this.pageTokenKey, "a-test-page-token-key-of-enough-bytes\n");
    const dirs = [...MTLS, ...Object.values(PLAIN)];
    await Promise.all(dirs.map(async (dir) => this.rendered.set(dir, await render(dir))));
  }

  /** Removes the scratch directory. */
  dispose(): void {
    rmSync(this.scratch, { recursive: true, force: true });
  }

  /** The rendering of `dir`; throws when it was not rendered. */
  objectsOf(dir: string): KubeObject[] {
    const objects = this.rendered.get(dir);
    if (objects === undefined) throw new Error(`${dir} was not rendered`);
    return objects;
  }

  /**
   * The registrar's container, its effective args and what parseRegistrarFlags
   * makes of them (with --page-token-key-file pointed at a real key, since the
   * parser reads it).
   */
  registrarOf(dir: string) {
    return parsedRegistrar(
      this.objectsOf(dir),
      { "page-token-key-file": this.pageTokenKey },
      OPERATOR_ENV,
    );
  }

  /** The agent's container, its effective args and what parseAgentFlags makes of them. */
  agentOf(dir: string) {
    return parsedAgent(this.objectsOf(dir));
  }

  /** The aether workloads of `dir` that get an SVID: the registrar, and the agent on a spoke. */
  svidWorkloadsOf(dir: string) {
    const registrar = this.registrarOf(dir);
    return dir === HUB_MTLS ? [registrar] : [registrar, this.agentOf(dir)];
  }
}
