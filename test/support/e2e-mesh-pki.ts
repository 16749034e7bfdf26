/**
 * The SPIFFE PKI of the e2e suite's mutual-TLS run, made with `openssl` in a
 * temp directory: one CA per cluster, its trust domain `<cluster>.mesh`
 * (hub.mesh, east.mesh, west.mesh), a registrar and an agent X.509-SVID per
 * cluster, and an operator SVID (the test's own client, `hub.mesh`). The
 * flags each process takes to use it are built here too.
 */
import { readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { spiffeServerIdentity } from "../../services/runtime/tls/peer-svid.js";
import { parseTrustBundle, type TrustBundles } from "../../services/runtime/tls/trust-bundle.js";
import {
  agentIdOf,
  registrarIdOf,
  trustDomainOf,
} from "../../services/sandbox/sandbox-identities.js";
import { createSpiffeCa, issueSvid, type SpiffeCa, type TestSvid } from "./spiffe-ca.js";

// The mesh's naming (trust domain `<cluster>.mesh`, the registrars' and agents' IDs) is the sandbox's.
export { agentIdOf, registrarIdOf, trustDomainOf };
/** The SPIFFE ID the test itself calls registrars with. */
export const OPERATOR_ID = "spiffe://hub.mesh/ns/aether-system/sa/aetherctl";

/** A CA and SVIDs per cluster; see {@link createMeshPki}. */
export interface MeshPki {
  readonly dir: string;
  readonly clusters: readonly string[];
  /** The CA of each cluster (its certificate is the trust domain's PEM bundle). */
  readonly cas: ReadonlyMap<string, SpiffeCa>;
  /** {@link registrarIdOf} each cluster, also for `localhost` and `127.0.0.1`. */
  readonly registrars: ReadonlyMap<string, TestSvid>;
  /** {@link agentIdOf} each cluster. */
  readonly agents: ReadonlyMap<string, TestSvid>;
  /** {@link OPERATOR_ID}, from hub's CA. */
  readonly operator: TestSvid;
  /** Removes the directory. */
  remove(): Promise<void>;
}

/** Makes the PKI of `clusters` (which must include `hub`): about six openssl runs per cluster. */
export async function createMeshPki(clusters: readonly string[]): Promise<MeshPki> {
  if (!clusters.includes("hub")) throw new Error("the mesh PKI needs the hub (the operator's CA)");
  const dir = await mkdtemp(join(tmpdir(), "aether-e2e-pki-"));
  const cas = new Map<string, SpiffeCa>();
  const registrars = new Map<string, TestSvid>();
  const agents = new Map<string, TestSvid>();
  // One CA at a time issues (its openssl database); the clusters run side by side.
  await Promise.all(
    clusters.map(async (cluster) => {
      const ca = await createSpiffeCa(dir, `${cluster}-ca`, trustDomainOf(cluster));
      cas.set(cluster, ca);
      registrars.set(
        cluster,
        await issueSvid(ca, dir, `${cluster}-registrar`, {
          uris: [registrarIdOf(cluster)],
          otherSans: ["DNS:localhost", "IP:127.0.0.1"],
        }),
      );
      agents.set(
        cluster,
        await issueSvid(ca, dir, `${cluster}-agent`, { uris: [agentIdOf(cluster)] }),
      );
    }),
  );
  const operator = await issueSvid(cas.get("hub") as SpiffeCa, dir, "operator", {
    uris: [OPERATOR_ID],
  });
  return {
    ...{ dir, clusters, cas, registrars, agents, operator },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

function get<T>(map: ReadonlyMap<string, T>, cluster: string): T {
  const value = map.get(cluster);
  if (value === undefined) throw new Error(`the mesh PKI has no cluster ${cluster}`);
  return value;
}

/** `--trust-domain-bundle TD=PATH` for every cluster of `pki` (each CA's PEM). */
export function bundleFlags(pki: MeshPki): string[] {
  return pki.clusters.flatMap((cluster) => [
    "--trust-domain-bundle",
    `${trustDomainOf(cluster)}=${get(pki.cas, cluster).cert}`,
  ]);
}

/**
 * The flags of `cluster`'s registrar: its SVID, every cluster's bundle, the
 * admin port on loopback, and `--authorize` for its own cluster's agents and
 * the operator only (an agent of another cluster is denied, naming its ID).
 */
export function registrarMtlsFlags(pki: MeshPki, cluster: string): string[] {
  const svid = get(pki.registrars, cluster);
  return [
    ...["--tls-cert-file", svid.cert, "--tls-key-file", svid.key],
    ...bundleFlags(pki),
    ...["--admin-listen", "127.0.0.1:0"],
    ...["--authorize", agentIdOf(cluster), "--authorize", OPERATOR_ID],
  ];
}

/**
 * The client TLS flags of an agent of `agentCluster` following the registrar
 * of `registrarCluster`: its SVID, every bundle, the registrar's SPIFFE ID.
 */
export function agentMtlsFlags(
  pki: MeshPki,
  agentCluster: string,
  registrarCluster: string,
): string[] {
  const svid = get(pki.agents, agentCluster);
  return [
    ...["--tls-cert-file", svid.cert, "--tls-key-file", svid.key],
    ...bundleFlags(pki),
    ...["--registrar-spiffe-id", registrarIdOf(registrarCluster)],
  ];
}

/**
 * aetherctl's client TLS flags as the operator (whom every registrar
 * authorizes) to `registrarCluster`'s registrar: the operator's SVID, every
 * bundle, the registrar's SPIFFE ID.
 */
export function operatorMtlsFlags(pki: MeshPki, registrarCluster: string): string[] {
  return [
    ...["--tls-cert-file", pki.operator.cert, "--tls-key-file", pki.operator.key],
    ...bundleFlags(pki),
    ...["--registrar-spiffe-id", registrarIdOf(registrarCluster)],
  ];
}

/**
 * Node TLS options (connect-node's `nodeOptions`, `tls.connect`) of a client
 * presenting `svid` (default: the operator's) to `registrarCluster`'s
 * registrar: every cluster's CA, and the registrar's SPIFFE ID checked
 * against its trust domain's bundle instead of the host name.
 */
export function clientTlsOptions(pki: MeshPki, registrarCluster: string, svid = pki.operator) {
  const pems = pki.clusters.map((c) => [c, readFileSync(get(pki.cas, c).cert, "utf8")] as const);
  const bundles: TrustBundles = new Map(
    pems.map(([c, pem]) => [trustDomainOf(c), parseTrustBundle(trustDomainOf(c), pem, c)]),
  );
  return {
    ca: pems.map(([, pem]) => pem),
    cert: readFileSync(svid.cert),
    key: readFileSync(svid.key),
    checkServerIdentity: spiffeServerIdentity(() => bundles, {
      expectedId: registrarIdOf(registrarCluster),
    }),
  };
}
