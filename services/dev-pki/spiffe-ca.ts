/**
 * The parts of a throwaway SPIFFE PKI, made with `openssl`, for tests (their
 * standard set is test/support/test-spiffe-pki.ts) and the sandbox's mutual
 * TLS (services/sandbox/sandbox-pki.ts): a CA per trust
 * domain (self-signed, or an intermediate under another CA), X.509-SVIDs
 * with chosen URI SANs, validity windows and serials, and SPIFFE bundles
 * (JWKS JSON as SPIRE's federation endpoint serves them). Leaves are issued
 * with `openssl ca`, so validity can lie in the past or the future; issue
 * from one CA one certificate at a time (await each), since each CA keeps
 * an openssl database of its own.
 */
import { generateKeyPairSync, X509Certificate } from "node:crypto";
import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { openssl } from "./openssl.js";

/** A SPIFFE signing CA: its certificate and key files, and where it keeps its openssl database. */
export interface SpiffeCa {
  readonly trustDomain: string;
  /** The CA's certificate (PEM). */
  readonly cert: string;
  /** The CA's private key (PEM). */
  readonly key: string;
  /** The certificates a leaf of this CA sends after itself: the intermediates up to (not including) the root, nearest first. */
  readonly chain: readonly string[];
  /** The openssl `ca` configuration of this CA. */
  readonly config: string;
}

/** An issued certificate: the PEM file a peer presents (leaf, then intermediates), its key, its serial as Node prints it. */
export interface TestSvid {
  readonly cert: string;
  readonly key: string;
  /** Upper-case hexadecimal, as `X509Certificate.serialNumber` and `getPeerCertificate().serialNumber` give it. */
  readonly serial: string;
}

/** What {@link issueSvid} puts in a certificate besides the defaults. */
export interface SvidOptions {
  /** URI SANs (SPIFFE IDs or anything else), in order; none when empty. */
  readonly uris: readonly string[];
  /** Further SANs in openssl syntax, for example `DNS:localhost`, `IP:127.0.0.1`. */
  readonly otherSans?: readonly string[];
  /** Issue a CA certificate (basicConstraints CA:TRUE) instead of a leaf. */
  readonly ca?: boolean;
  /** A leaf's keyUsage extension in openssl syntax; default `critical,digitalSignature,keyEncipherment`. */
  readonly keyUsage?: string;
  /** Default: an hour ago. */
  readonly notBefore?: Date;
  /** Default: a day from now. */
  readonly notAfter?: Date;
  readonly keyType?: "ec" | "rsa";
}

const HOUR = 3_600_000;

function keyArgs(keyType: "ec" | "rsa" = "ec"): string[] {
  return keyType === "ec"
    ? ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256"]
    : ["-newkey", "rsa:2048"];
}

/** `YYYYMMDDHHMMSSZ`, the date form `openssl ca -startdate/-enddate` takes. */
function opensslDate(date: Date): string {
  return `${date.toISOString().replace(/[-:T]/g, "").slice(0, 14)}Z`;
}

/** Writes the openssl `ca` database and configuration of a CA under `dir/<name>-db`. */
async function writeCaDatabase(dir: string, name: string): Promise<string> {
  const db = join(dir, `${name}-db`);
  await mkdir(db, { recursive: true });
  await writeFile(join(db, "index.txt"), "");
  const serial = Math.floor(Math.random() * 0xefffffff + 0x10000000).toString(16);
  await writeFile(join(db, "serial"), `${serial}\n`);
  const config = join(db, "ca.cnf");
  await writeFile(
    config,
    [
      "[ca]",
      "default_ca = test_ca",
      "[test_ca]",
      `database = ${join(db, "index.txt")}`,
      `serial = ${join(db, "serial")}`,
      `new_certs_dir = ${db}`,
      "default_md = sha256",
      "policy = any",
      "unique_subject = no",
      "copy_extensions = none",
      "[any]",
      "commonName = optional",
      "",
    ].join("\n"),
  );
  return config;
}

/**
 * Makes a CA for `trustDomain` under `dir/<name>.{crt,key}`: self-signed
 * (valid for `days`, default two, from now), or, with `parent`, an intermediate signed by
 * it. Its certificate carries the URI SAN `spiffe://<trustDomain>` and the
 * CA key usages, as X.509-SVID signing certificates do.
 */
export async function createSpiffeCa(
  dir: string,
  name: string,
  trustDomain: string,
  options: {
    readonly parent?: SpiffeCa;
    readonly keyType?: "ec" | "rsa";
    /** A self-signed CA's validity in days from now (default 2). */
    readonly days?: number;
  } = {},
): Promise<SpiffeCa> {
  await mkdir(dir, { recursive: true });
  const cert = join(dir, `${name}.crt`);
  const key = join(dir, `${name}.key`);
  const config = await writeCaDatabase(dir, name);
  const { parent } = options;
  if (parent === undefined) {
    await openssl([
      ...["req", "-x509", ...keyArgs(options.keyType), "-nodes", "-keyout", key, "-out", cert],
      ...["-subj", `/CN=${name}`, "-days", String(options.days ?? 2)],
      ...["-addext", "basicConstraints=critical,CA:TRUE"],
      ...["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
      ...["-addext", `subjectAltName=URI:spiffe://${trustDomain}`],
    ]);
    return { trustDomain, cert, key, chain: [], config };
  }
  await issueSvid(parent, dir, name, { uris: [`spiffe://${trustDomain}`], ca: true }, key);
  return { trustDomain, cert, key, chain: [cert, ...parent.chain], config };
}

/**
 * Issues a certificate from `ca` under `dir/<name>.{crt,key}` (the `.crt`
 * holds the leaf and then `ca`'s chain, as a peer sends it). A leaf has the
 * X.509-SVID key usages (digitalSignature; serverAuth and clientAuth);
 * `options` chooses its SANs, validity and whether it is a CA. `keyFile`
 * overrides where the key goes (used for intermediate CAs).
 */
export async function issueSvid(
  ca: SpiffeCa,
  dir: string,
  name: string,
  options: SvidOptions,
  keyFile = join(dir, `${name}.key`),
): Promise<TestSvid> {
  await mkdir(dir, { recursive: true });
  const cert = join(dir, `${name}.crt`);
  const csr = join(dir, `${name}.csr`);
  const ext = join(dir, `${name}.ext`);
  await openssl([
    ...["req", "-new", ...keyArgs(options.keyType), "-nodes", "-keyout", keyFile],
    ...["-out", csr, "-subj", `/CN=${name}`],
  ]);
  const alt = options.uris.map((uri, i) => `URI.${i + 1} = ${uri}`);
  const others = (options.otherSans ?? []).map((san, i) => {
    const [type, value] = san.split(/:(.*)/s) as [string, string];
    return `${type}.${i + 1} = ${value}`;
  });
  await writeFile(
    ext,
    [
      options.ca === true
        ? "basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign"
        : `basicConstraints=critical,CA:FALSE\nkeyUsage=${options.keyUsage ?? "critical,digitalSignature,keyEncipherment"}\nextendedKeyUsage=serverAuth,clientAuth`,
      ...(alt.length + others.length === 0
        ? []
        : ["subjectAltName=@alt", "[alt]", ...alt, ...others]),
      "",
    ].join("\n"),
  );
  const leaf = join(dir, `${name}.leaf.crt`);
  await openssl([
    ...["ca", "-batch", "-notext", "-config", ca.config, "-cert", ca.cert, "-keyfile", ca.key],
    ...["-in", csr, "-out", leaf, "-extfile", ext],
    ...["-startdate", opensslDate(options.notBefore ?? new Date(Date.now() - HOUR))],
    ...["-enddate", opensslDate(options.notAfter ?? new Date(Date.now() + 24 * HOUR))],
  ]);
  const leafPem = await readFile(leaf, "utf8");
  const chainPems = await Promise.all(ca.chain.map((file) => readFile(file, "utf8")));
  await writeFile(cert, [leafPem, ...chainPems].join(""));
  return { cert, key: keyFile, serial: new X509Certificate(leafPem).serialNumber };
}

/**
 * Writes a SPIFFE bundle (JWKS JSON) to `path`: one `x509-svid` key (with
 * `x5c` and the key's public parameters) per CA in `cas`, a `jwt-svid` key
 * (which X.509 consumers ignore) and the sequence and refresh hint, as
 * SPIRE's federation endpoint serves them.
 */
export async function writeJwksBundle(path: string, cas: readonly SpiffeCa[]): Promise<void> {
  const x509Keys = await Promise.all(
    cas.map(async (ca) => {
      const cert = new X509Certificate(await readFile(ca.cert));
      return {
        ...cert.publicKey.export({ format: "jwk" }),
        use: "x509-svid",
        x5c: [cert.raw.toString("base64")],
      };
    }),
  );
  const jwtKey = generateKeyPairSync("ec", { namedCurve: "P-256" }).publicKey.export({
    format: "jwk",
  });
  const bundle = {
    keys: [...x509Keys, { ...jwtKey, use: "jwt-svid", kid: "jwt-authority-1" }],
    spiffe_refresh_hint: 300,
    spiffe_sequence: 7,
  };
  await writeFile(path, `${JSON.stringify(bundle, null, 2)}\n`);
}
