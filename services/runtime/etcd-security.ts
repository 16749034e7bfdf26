/**
 * TLS and authentication towards etcd: the files the registrar's
 * `--etcd-ca-file`, `--etcd-cert-file`, `--etcd-key-file`, `--etcd-username`
 * and `--etcd-password-file` name, read once at start, and what the etcd3
 * client makes of them.
 */
import { X509Certificate } from "node:crypto";
import { readFileSync } from "node:fs";
import { createSecureContext } from "node:tls";
import type { IOptions } from "etcd3";

/** TLS material and credentials for etcd; see {@link readEtcdSecurity}. */
export interface EtcdSecurity {
  /**
   * TLS towards etcd. A missing `rootCertificate` verifies etcd's certificate
   * against the system trust store; `certChain` and `privateKey` (both or
   * neither) are the client certificate for etcd's `--client-cert-auth`.
   */
  credentials?: { rootCertificate?: Buffer; certChain?: Buffer; privateKey?: Buffer };
  /** etcd's user/password authentication (RBAC). */
  auth?: { username: string; password: string };
}

/** The files and the user name {@link readEtcdSecurity} reads (the registrar's flags). */
export interface EtcdSecurityFiles {
  /** `--etcd-ca-file`: a PEM bundle of the CAs that may sign etcd's server certificate. */
  readonly etcdCaFile?: string | undefined;
  /** `--etcd-cert-file`: the PEM client certificate (chain). */
  readonly etcdCertFile?: string | undefined;
  /** `--etcd-key-file`: the PEM private key of the client certificate. */
  readonly etcdKeyFile?: string | undefined;
  /** `--etcd-username`: the etcd user. */
  readonly etcdUsername?: string | undefined;
  /** `--etcd-password-file`: a file holding the etcd user's password. */
  readonly etcdPasswordFile?: string | undefined;
}

/**
 * How long the password-to-token exchange may take, in milliseconds. Without
 * a deadline a frozen etcd would hold the exchange (and every call waiting on
 * its token) forever; with one it fails and the next call tries again.
 */
export const ETCD_AUTH_TIMEOUT_MS = 5_000;

/** Reads one file of a flag; throws an Error naming the flag and the file. */
function readFlagFile(flag: string, path: string): Buffer {
  let content: Buffer;
  try {
    content = readFileSync(path);
  } catch (error) {
    throw new Error(`--${flag} ${path}: cannot read it: ${(error as Error).message}`);
  }
  if (content.length === 0) throw new Error(`--${flag} ${path}: the file is empty`);
  return content;
}

/**
 * Reads the TLS files and the password file `files` names, synchronously, and
 * checks them: the CA bundle must hold a PEM certificate, the client
 * certificate and key must be PEM and belong together, the password (its
 * trailing newlines trimmed) must not be empty. Returns undefined when no file
 * and no user name is given (plaintext or plain TLS, no authentication).
 * Throws an Error naming the flag and the file when one cannot be read or is
 * not what it should be, or when a flag's partner is missing (a certificate
 * without a key, a user without a password file).
 */
export function readEtcdSecurity(files: EtcdSecurityFiles): EtcdSecurity | undefined {
  const { etcdCaFile, etcdCertFile, etcdKeyFile, etcdUsername, etcdPasswordFile } = files;
  if ((etcdCertFile === undefined) !== (etcdKeyFile === undefined)) {
    throw new Error(
      etcdCertFile === undefined
        ? "--etcd-key-file needs --etcd-cert-file (the client certificate of that key)"
        : "--etcd-cert-file needs --etcd-key-file (the private key of that certificate)",
    );
  }
  if ((etcdUsername === undefined) !== (etcdPasswordFile === undefined)) {
    throw new Error(
      etcdUsername === undefined
        ? "--etcd-password-file needs --etcd-username"
        : "--etcd-username needs --etcd-password-file (the password is read from a file)",
    );
  }
  const security: EtcdSecurity = {};
  if (etcdCaFile !== undefined || etcdCertFile !== undefined) {
    const credentials: NonNullable<EtcdSecurity["credentials"]> = {};
    if (etcdCaFile !== undefined) {
      const ca = readFlagFile("etcd-ca-file", etcdCaFile);
      try {
        new X509Certificate(ca);
      } catch (error) {
        throw new Error(
          `--etcd-ca-file ${etcdCaFile}: not a PEM certificate bundle: ${(error as Error).message}`,
        );
      }
      credentials.rootCertificate = ca;
    }
    if (etcdCertFile !== undefined && etcdKeyFile !== undefined) {
      const certChain = readFlagFile("etcd-cert-file", etcdCertFile);
      const privateKey = readFlagFile("etcd-key-file", etcdKeyFile);
      try {
        createSecureContext({ cert: certChain, key: privateKey });
      } catch (error) {
        throw new Error(
          `--etcd-cert-file ${etcdCertFile} and --etcd-key-file ${etcdKeyFile} are not a PEM ` +
            `certificate and its private key: ${(error as Error).message}`,
        );
      }
      credentials.certChain = certChain;
      credentials.privateKey = privateKey;
    }
    security.credentials = credentials;
  }
  if (etcdUsername !== undefined && etcdPasswordFile !== undefined) {
    if (etcdUsername === "") throw new Error("--etcd-username must not be empty");
    const password = readFlagFile("etcd-password-file", etcdPasswordFile)
      .toString("utf8")
      .replace(/[\r\n]+$/, "");
    if (password === "") {
      throw new Error(`--etcd-password-file ${etcdPasswordFile}: the password is empty`);
    }
    security.auth = { username: etcdUsername, password };
  }
  return security.credentials === undefined && security.auth === undefined ? undefined : security;
}

/**
 * The etcd3 client options for `security`: `credentials` (TLS; etcd3 then
 * speaks TLS to every host, and gRPC verifies against the system trust store
 * when no root certificate is given) and `auth` (with a deadline on the
 * token exchange, {@link ETCD_AUTH_TIMEOUT_MS}). Empty without `security`:
 * etcd3 then speaks TLS only to `https://` hosts, verified against the system
 * trust store.
 */
export function etcdSecurityOptions(
  security: EtcdSecurity | undefined,
): Pick<IOptions, "credentials" | "auth"> {
  const options: Pick<IOptions, "credentials" | "auth"> = {};
  const credentials = security?.credentials;
  if (credentials !== undefined) {
    // etcd3's type says rootCertificate is required, but it only hands it to
    // gRPC's createSsl, which uses the default roots when it is missing.
    options.credentials = {
      rootCertificate: credentials.rootCertificate as Buffer,
      ...(credentials.certChain === undefined ? {} : { certChain: credentials.certChain }),
      ...(credentials.privateKey === undefined ? {} : { privateKey: credentials.privateKey }),
    };
  }
  const auth = security?.auth;
  if (auth !== undefined) {
    options.auth = {
      username: auth.username,
      password: auth.password,
      callOptions: () => ({ deadline: Date.now() + ETCD_AUTH_TIMEOUT_MS }),
    };
  }
  return options;
}

/**
 * The etcd user `security` signs in as, for messages: the user name of
 * password authentication (which etcd prefers when both are given), else the
 * common name of the client certificate (etcd's `--client-cert-auth` takes
 * the user from it); undefined when neither is there or the CN cannot be read.
 */
export function etcdUserOf(security: EtcdSecurity | undefined): string | undefined {
  if (security?.auth !== undefined) return security.auth.username;
  const certChain = security?.credentials?.certChain;
  if (certChain === undefined) return undefined;
  try {
    const subject = new X509Certificate(certChain).subject;
    return /^CN=(.*)$/m.exec(subject)?.[1];
  } catch {
    return undefined;
  }
}
