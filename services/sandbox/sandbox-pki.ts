/**
 * The sandbox's PKI on disk (`--tls`, the default): a CA per cluster and the
 * SVIDs of `sandbox-identities.ts`, made with `openssl` in one directory
 * (`.sandbox/pki/` by default) and reused by the next run while every file
 * is still good, so commands printed once (and the README's) keep working.
 * A PKI that is incomplete, expiring within a day, or does not name the
 * listen host is made anew as a whole.
 */
import { createPrivateKey, X509Certificate } from "node:crypto";
import { chmod, mkdir, mkdtemp, readFile, rename, rm, unlink, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { OPENSSL, requireBinary } from "../dev-pki/openssl.js";
import { createSpiffeCa, issueSvid, type SpiffeCa } from "../dev-pki/spiffe-ca.js";
import {
  bundleFileName,
  CA_BUNDLE_FILE,
  OPERATOR_NAME,
  type SvidSpec,
  sandboxSvids,
  servingSans,
} from "./sandbox-identities.js";

/** A certificate and its key file. */
export interface SvidFiles {
  readonly cert: string;
  readonly key: string;
}

/** The sandbox's PKI: where each file is. */
export interface SandboxPki {
  /** The directory. */
  readonly dir: string;
  /** Each cluster's trust-domain bundle (its CA certificate), by cluster. */
  readonly bundles: ReadonlyMap<string, string>;
  /** Every cluster's CA in one file (`--cacert` of curl and buf curl). */
  readonly caBundle: string;
  /** The SVIDs by name (`hub-registrar`, `east-agent`, `operator`, ...). */
  readonly svids: ReadonlyMap<string, SvidFiles>;
  /** The operator's SVID. */
  readonly operator: SvidFiles;
  /** Whether the files of an earlier run were reused. */
  readonly reused: boolean;
}

/** How long a CA is valid, and an SVID. */
const CA_DAYS = 365;
const SVID_DAYS = 90;
/** A PKI with anything expiring sooner than this is made anew. */
const MIN_REMAINING_MS = 86_400_000;

/** Thrown when `openssl` is missing: the sandbox prints its message as its one line. */
export class OpensslMissingError extends Error {}

function layout(dir: string, clusters: readonly string[], agents: readonly string[]) {
  const specs = sandboxSvids(clusters, agents);
  const svids = new Map(
    specs.map((s) => [
      s.name,
      { cert: join(dir, `${s.name}.crt`), key: join(dir, `${s.name}.key`) },
    ]),
  );
  return {
    specs,
    pki: {
      dir,
      bundles: new Map(clusters.map((c) => [c, join(dir, bundleFileName(c))])),
      caBundle: join(dir, CA_BUNDLE_FILE),
      svids,
      operator: svids.get(OPERATOR_NAME) as SvidFiles,
    },
  };
}

/**
 * Why the PKI laid out in `pki` cannot be reused (a sentence), or undefined
 * when every SVID is there, chains to its cluster's CA, matches its key,
 * carries its SPIFFE ID, names the hosts (registrars), and no file expires
 * within a day.
 */
async function reuseProblem(
  pki: Omit<SandboxPki, "reused">,
  specs: readonly SvidSpec[],
  sans: readonly string[],
): Promise<string | undefined> {
  const limit = Date.now() + MIN_REMAINING_MS;
  try {
    const cas = new Map<string, X509Certificate>();
    for (const [cluster, file] of pki.bundles) {
      const ca = new X509Certificate(await readFile(file));
      if (Date.parse(ca.validTo) < limit) return `${file} expires ${ca.validTo}`;
      cas.set(cluster, ca);
    }
    for (const spec of specs) {
      const files = pki.svids.get(spec.name) as SvidFiles;
      const cert = new X509Certificate(await readFile(files.cert));
      const ca = cas.get(spec.cluster) as X509Certificate;
      if (Date.parse(cert.validTo) < limit) return `${files.cert} expires ${cert.validTo}`;
      if (!cert.checkIssued(ca) || !cert.verify(ca.publicKey)) return `${files.cert}: not its CA's`;
      if (!cert.checkPrivateKey(createPrivateKey(await readFile(files.key)))) {
        return `${files.key} is not ${files.cert}'s key`;
      }
      if (!(cert.subjectAltName ?? "").includes(`URI:${spec.id}`))
        return `${files.cert}: not ${spec.id}`;
      if (spec.serves && !sans.every((san) => namesHost(cert, san))) {
        return `${files.cert} does not name ${sans.join(", ")}`;
      }
    }
    await readFile(pki.caBundle);
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** Whether `cert` names the openssl-syntax SAN `san` (`DNS:x` or `IP:x`). */
function namesHost(cert: X509Certificate, san: string): boolean {
  const [type, value] = san.split(/:(.*)/s) as [string, string];
  return (type === "IP" ? cert.checkIP(value) : cert.checkHost(value)) !== undefined;
}

/**
 * Makes every file of the PKI in `into`: a CA per cluster, the bundles, the
 * SVIDs (registrars also naming `sans`); removes openssl's scratch files.
 */
async function makePki(
  into: string,
  clusters: readonly string[],
  specs: readonly SvidSpec[],
  sans: readonly string[],
): Promise<void> {
  await mkdir(into, { recursive: true, mode: 0o700 });
  const caDir = join(into, "ca");
  const cas = new Map<string, SpiffeCa>();
  for (const cluster of clusters) {
    const ca = await createSpiffeCa(caDir, cluster, `${cluster}.mesh`, { days: CA_DAYS });
    cas.set(cluster, ca);
    await writeFile(join(into, bundleFileName(cluster)), await readFile(ca.cert));
  }
  const pems = await Promise.all(clusters.map((c) => readFile(join(into, bundleFileName(c)))));
  await writeFile(join(into, CA_BUNDLE_FILE), Buffer.concat(pems));
  for (const spec of specs) {
    await issueSvid(cas.get(spec.cluster) as SpiffeCa, into, spec.name, {
      uris: [spec.id],
      otherSans: spec.serves ? sans : [],
      notAfter: new Date(Date.now() + SVID_DAYS * 86_400_000),
    });
    for (const scratch of [".csr", ".ext", ".leaf.crt"]) {
      await unlink(join(into, `${spec.name}${scratch}`)).catch(() => undefined);
    }
    await chmod(join(into, `${spec.name}.key`), 0o600);
  }
}

/**
 * The sandbox's PKI in `dir` for these clusters (the hub first), agent
 * clusters and listen host: reused when still good (see the module
 * comment), else made anew in a sibling directory and moved into place.
 * Throws {@link OpensslMissingError} when it must be made and `openssl` is
 * not installed.
 */
export async function ensureSandboxPki(
  dir: string,
  clusters: readonly string[],
  agents: readonly string[],
  listenHost: string,
): Promise<SandboxPki> {
  const { specs, pki } = layout(dir, clusters, agents);
  const sans = servingSans(listenHost);
  if ((await reuseProblem(pki, specs, sans)) === undefined) return { ...pki, reused: true };
  try {
    requireBinary(OPENSSL, "openssl");
  } catch {
    throw new OpensslMissingError(
      `openssl not found at ${OPENSSL} (set $OPENSSL_BIN): install openssl (apt-get install -y openssl) to make the sandbox's certificates, or run with --plaintext`,
    );
  }
  await mkdir(dirname(dir), { recursive: true });
  const fresh = await mkdtemp(`${dir}.new-`);
  try {
    await makePki(fresh, clusters, specs, sans);
    await rm(dir, { recursive: true, force: true });
    await rename(fresh, dir);
  } catch (error) {
    // Another sandbox starting at the same moment may have put its PKI in place first.
    if ((await reuseProblem(pki, specs, sans)) !== undefined) throw error;
    return { ...pki, reused: true };
  } finally {
    await rm(fresh, { recursive: true, force: true });
  }
  return { ...pki, reused: false };
}
