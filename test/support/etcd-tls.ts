/**
 * A real etcd behind TLS for tests: throwaway certificate authorities and
 * certificates made with `openssl`, an etcd started by {@link startEtcd} with
 * https:// client URLs (and client certificate authentication), and
 * `etcdctl` against it.
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { request } from "node:https";
import { join } from "node:path";
import { promisify } from "node:util";
import { type EtcdHandle, startEtcd } from "./etcd.js";
import { openssl, requireBinary } from "./openssl.js";

const run = promisify(execFile);

export { OPENSSL } from "./openssl.js";

/** The `etcdctl` binary; `$ETCDCTL_BIN` or `/usr/bin/etcdctl`. */
export const ETCDCTL = process.env.ETCDCTL_BIN ?? "/usr/bin/etcdctl";

/** A certificate authority: its certificate and key (PEM files). */
export interface TestCa {
  readonly cert: string;
  readonly key: string;
}

/** A certificate issued by a {@link TestCa}, and its key (PEM files). */
export interface TestCert {
  readonly cert: string;
  readonly key: string;
}

/** A CA, etcd's server certificate and a client certificate, all from that CA. */
export interface TestPki {
  readonly ca: TestCa;
  /** For `127.0.0.1` and `localhost`. */
  readonly server: TestCert;
  /** A client certificate (common name `aether-registrar`). */
  readonly client: TestCert;
}

/** A P-256 key and a self-signed CA certificate valid for a day, under `dir/<name>.{crt,key}`. */
export async function createTestCa(dir: string, name: string): Promise<TestCa> {
  await mkdir(dir, { recursive: true });
  const ca = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  await openssl([
    "req",
    "-x509",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    ca.key,
    "-out",
    ca.cert,
    "-subj",
    `/CN=${name}`,
    "-days",
    "1",
    "-addext",
    "basicConstraints=critical,CA:TRUE",
    "-addext",
    "keyUsage=critical,keyCertSign,cRLSign",
  ]);
  return ca;
}

/**
 * A P-256 key and a certificate for `commonName` signed by `ca`, valid for a
 * day, with the subject alternative names `sans` (for example
 * `IP:127.0.0.1`), under `dir/<name>.{crt,key}`.
 */
export async function issueTestCert(
  ca: TestCa,
  dir: string,
  name: string,
  commonName: string,
  sans: readonly string[] = [],
): Promise<TestCert> {
  const cert = { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await openssl([
    "req",
    "-new",
    "-newkey",
    "ec",
    "-pkeyopt",
    "ec_paramgen_curve:P-256",
    "-nodes",
    "-keyout",
    cert.key,
    "-out",
    csr,
    "-subj",
    `/CN=${commonName}`,
  ]);
  await writeFile(
    ext,
    [
      "basicConstraints=critical,CA:FALSE",
      "keyUsage=critical,digitalSignature,keyEncipherment",
      "extendedKeyUsage=serverAuth,clientAuth",
      ...(sans.length === 0 ? [] : [`subjectAltName=${sans.join(",")}`]),
      "",
    ].join("\n"),
  );
  await openssl([
    "x509",
    "-req",
    "-in",
    csr,
    "-CA",
    ca.cert,
    "-CAkey",
    ca.key,
    "-CAcreateserial",
    "-out",
    cert.cert,
    "-days",
    "1",
    "-extfile",
    ext,
  ]);
  return cert;
}

/** A throwaway CA (`name`) with a server certificate for loopback and a client certificate. */
export async function createTestPki(dir: string, name = "aether-test-ca"): Promise<TestPki> {
  const ca = await createTestCa(dir, name);
  const server = await issueTestCert(ca, dir, "server", "etcd-test-server", [
    "IP:127.0.0.1",
    "DNS:localhost",
  ]);
  const client = await issueTestCert(ca, dir, "client", "aether-registrar");
  return { ca, server, client };
}

/**
 * The etcd TLS flags of a registrar (and of `aetherctl etcd-rbac --apply`):
 * `pki`'s CA and the client certificate `cert` (default `pki.client`).
 */
export function etcdTlsFlags(pki: TestPki, cert: TestCert = pki.client): string[] {
  return [
    "--etcd-ca-file",
    pki.ca.cert,
    "--etcd-cert-file",
    cert.cert,
    "--etcd-key-file",
    cert.key,
  ];
}

/** Resolves true when etcd's /health, fetched over TLS with `pki`'s CA and client certificate, says healthy. */
function isHealthyOverTls(pki: TestPki): (endpoint: string) => Promise<boolean> {
  const ca = readFileSync(pki.ca.cert);
  const cert = readFileSync(pki.client.cert);
  const key = readFileSync(pki.client.key);
  return (endpoint) =>
    new Promise<boolean>((resolve) => {
      const req = request(
        `${endpoint}/health`,
        { ca, cert, key, timeout: 1_000, agent: false },
        (response) => {
          let body = "";
          response.setEncoding("utf8");
          response.on("data", (chunk: string) => {
            body += chunk;
          });
          response.on("end", () => {
            try {
              const parsed = JSON.parse(body) as { health?: unknown };
              resolve(response.statusCode === 200 && parsed.health === "true");
            } catch {
              resolve(false);
            }
          });
          response.on("error", () => resolve(false));
        },
      );
      req.on("timeout", () => req.destroy(new Error("timeout")));
      req.on("error", () => resolve(false));
      req.end();
    });
}

/**
 * Starts a real etcd serving clients on https:// with `pki`'s server
 * certificate, requiring client certificates signed by `pki`'s CA
 * (`--client-cert-auth`), and resolves once its /health answers over TLS.
 */
export async function startTlsEtcd(pki: TestPki): Promise<EtcdHandle> {
  return startEtcd({
    clientScheme: "https",
    extraArgs: [
      `--cert-file=${pki.server.cert}`,
      `--key-file=${pki.server.key}`,
      "--client-cert-auth",
      `--trusted-ca-file=${pki.ca.cert}`,
    ],
    isHealthy: isHealthyOverTls(pki),
  });
}

/**
 * Runs `etcdctl` (API v3) against `etcd` over TLS with `pki`'s client
 * certificate, as `user` (`name:password`) when given; resolves with its
 * standard output, rejects with its standard error.
 */
export async function etcdctl(
  etcd: EtcdHandle,
  pki: TestPki,
  args: readonly string[],
  user?: string,
): Promise<string> {
  requireBinary(ETCDCTL, "etcd-client (or set ETCDCTL_BIN)");
  try {
    const { stdout } = await run(
      ETCDCTL,
      [
        `--endpoints=${etcd.endpoint}`,
        `--cacert=${pki.ca.cert}`,
        `--cert=${pki.client.cert}`,
        `--key=${pki.client.key}`,
        ...(user === undefined ? [] : [`--user=${user}`]),
        ...args,
      ],
      { env: { ...process.env, ETCDCTL_API: "3" }, timeout: 15_000 },
    );
    return stdout;
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`etcdctl ${args.join(" ")} failed: ${(error as Error).message}\n${stderr}`, {
      cause: error,
    });
  }
}
