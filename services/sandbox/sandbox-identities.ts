/**
 * Who is who in the sandbox's mutual TLS, as data: a trust domain per
 * cluster (`<cluster>.mesh`), the SPIFFE IDs of its registrars, agents and
 * operator, the file names of their SVIDs and bundles in the PKI directory,
 * and whom each registrar authorizes. Pure.
 */
import { HUB_CLUSTER } from "./sandbox-topology.js";

/** The registrars' service account path (`spiffe://<td>/` + it). */
const REGISTRAR_PATH = "ns/aether-system/sa/aether-registrar";
/** The agents' service account path. */
const AGENT_PATH = "ns/aether-system/sa/aether-agent";

/** A cluster's trust domain: `hub.mesh`, `east.mesh`, `west.mesh`. */
export function trustDomainOf(cluster: string): string {
  return `${cluster}.mesh`;
}

/** The SPIFFE ID of `cluster`'s registrar. */
export function registrarIdOf(cluster: string): string {
  return `spiffe://${trustDomainOf(cluster)}/${REGISTRAR_PATH}`;
}

/** The SPIFFE ID of `cluster`'s agents. */
export function agentIdOf(cluster: string): string {
  return `spiffe://${trustDomainOf(cluster)}/${AGENT_PATH}`;
}

/** The operator's SPIFFE ID (aetherctl, `buf curl`, `curl`): issued by the hub's CA. */
export const OPERATOR_ID = `spiffe://${trustDomainOf(HUB_CLUSTER)}/ns/aether-system/sa/aether-operator`;

/** One X.509-SVID the sandbox issues. */
export interface SvidSpec {
  /** The file name without extension: `<name>.crt` and `<name>.key` in the PKI directory. */
  readonly name: string;
  /** The cluster whose CA issues it. */
  readonly cluster: string;
  /** Its SPIFFE ID. */
  readonly id: string;
  /** Whether it serves (a registrar): then it also names the listen hosts, for curl and buf. */
  readonly serves: boolean;
}

/** The file of `cluster`'s CA certificate, which is also its trust domain's bundle. */
export function bundleFileName(cluster: string): string {
  return `${trustDomainOf(cluster)}.pem`;
}

/** The file holding every cluster's CA, for `curl --cacert` and `buf curl --cacert`. */
export const CA_BUNDLE_FILE = "ca-bundle.pem";

/** The operator's SVID's file name (`operator.crt`, `operator.key`). */
export const OPERATOR_NAME = "operator";

/**
 * Every SVID of a sandbox with these clusters (the hub first) and these
 * agent clusters: a registrar per cluster, an agent per agent cluster, the
 * operator.
 */
export function sandboxSvids(
  clusters: readonly string[],
  agentClusters: readonly string[],
): SvidSpec[] {
  return [
    ...clusters.map((cluster) => ({
      name: `${cluster}-registrar`,
      cluster,
      id: registrarIdOf(cluster),
      serves: true,
    })),
    ...agentClusters.map((cluster) => ({
      name: `${cluster}-agent`,
      cluster,
      id: agentIdOf(cluster),
      serves: false,
    })),
    { name: OPERATOR_NAME, cluster: HUB_CLUSTER, id: OPERATOR_ID, serves: false },
  ];
}

/**
 * The `--authorize` patterns of `cluster`'s registrar: its own cluster's
 * agents, every cluster's registrar (federation: a registrar may read
 * another), and the operator. Another cluster's agent is refused.
 */
export function authorizedIds(cluster: string, clusters: readonly string[]): string[] {
  return [agentIdOf(cluster), ...clusters.map(registrarIdOf), OPERATOR_ID];
}

/**
 * The SANs besides the SPIFFE ID that a registrar's certificate names, so
 * that `curl` and `buf curl` (which check host names, not SPIFFE IDs) accept
 * it: loopback by name and address, and the listen host unless it is a
 * wildcard. In openssl syntax (`DNS:localhost`, `IP:127.0.0.1`).
 */
export function servingSans(listenHost: string): string[] {
  const sans = ["DNS:localhost", "IP:127.0.0.1", "IP:::1"];
  if (listenHost === "0.0.0.0" || listenHost === "::") return sans;
  const isIp = /^[\d.]+$/.test(listenHost) || listenHost.includes(":");
  const san = `${isIp ? "IP" : "DNS"}:${listenHost}`;
  return sans.includes(san) ? sans : [...sans, san];
}
