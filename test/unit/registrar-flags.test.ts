import { generateKeyPairSync } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { hostname, tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { replicaNameFromHost } from "../../services/common/status-layout.js";
import { UsageError } from "../../services/process/usage-error.js";
import {
  parseRegistrarFlags,
  REGISTRAR_USAGE,
  readPageTokenKey,
} from "../../services/registrar/registrar-flags.js";
import { readEtcdSecurity } from "../../services/runtime/etcd-security.js";

describe("registrar flags", () => {
  it("applies defaults", () => {
    expect(parseRegistrarFlags(["--cluster", "hub"])).toMatchObject({
      cluster: "hub",
      host: "127.0.0.1",
      port: 8080,
      store: "memory",
      etcdPrefix: "/aether/v1",
      controlCluster: undefined,
      keepaliveMs: 15_000,
      adminListen: undefined,
    });
  });
  it("parses everything", () => {
    expect(
      parseRegistrarFlags([
        "--cluster=spoke-a",
        "--listen=[::1]:0",
        "--store=etcd",
        "--etcd-endpoints=http://127.0.0.1:2379, http://127.0.0.1:2380",
        "--etcd-prefix=/x/y/",
        "--control-cluster=hub",
        "--keepalive=2s",
        "--admin-listen=:9090",
      ]),
    ).toMatchObject({
      cluster: "spoke-a",
      host: "::1",
      port: 0,
      store: "etcd",
      etcdEndpoints: ["http://127.0.0.1:2379", "http://127.0.0.1:2380"],
      etcdPrefix: "/x/y",
      controlCluster: "hub",
      keepaliveMs: 2000,
      adminListen: { host: "0.0.0.0", port: 9090 },
    });
  });
  it("returns help", () => expect(parseRegistrarFlags(["--help"])).toBe("help"));
  const bad: [string[], RegExp][] = [
    [[], /--cluster is required/],
    [["--cluster", "Hub"], /--cluster: cluster name "Hub" is not a DNS-1123 label/],
    [["--cluster", "hub", "--store", "redis"], /--store "redis" must be memory or etcd/],
    [["--cluster", "hub", "--store", "etcd"], /needs --etcd-endpoints/],
    [["--cluster", "hub", "--listen", "8080"], /--listen "8080" is not HOST:PORT/],
    [["--cluster", "hub", "--listen", "h:99999"], /is not HOST:PORT/],
    [["--cluster", "hub", "--admin-listen", "9090"], /--admin-listen "9090" is not HOST:PORT/],
    [["--cluster", "hub", "--keepalive", "soon"], /--keepalive: "soon" is not a duration/],
    [
      ["--cluster", "hub", "--etcd-prefix", "aether"],
      /--etcd-prefix: store prefix must start with/,
    ],
    [["--cluster", "hub", "--bogus"], /Unknown option '--bogus'/],
    [["--cluster", "hub", "--control-cluster", "a/b"], /--control-cluster: cluster name "a\/b"/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${argv.join(" ") || "no flags"}`, () =>
      expect(() => parseRegistrarFlags(argv)).toThrow(message));
  }
});

/** A self-signed P-256 certificate and its key (valid until 2126; only parsed here). */
const CERT = `-----BEGIN CERTIFICATE-----
MIIBjjCCATOgAwIBAgIUNqsqFLcBxP8cTpzUDAKnAsgWTqkwCgYIKoZIzj0EAwIw
GzEZMBcGA1UEAwwQYWV0aGVyLXVuaXQtdGVzdDAgFw0yNjExMzAwMzIyMjZaGA8y
MTI2MTEwNjAzMjIyNlowGzEZMBcGA1UEAwwQYWV0aGVyLXVuaXQtdGVzdDBZMBMG
ByqGSM49AgEGCCqGSM49AwEHA0IABAL/WsDMEhomefoYcX0aSRVS8ceE4taidfAA
r4iSO6DUwglPeO+Df4miWZj2eVcew7OOAbh5q/VQkxOePtIWPyOjUzBRMB0GA1Ud
DgQWBBShhPlK1WpQ7b7CLUA43Temo5je0jAfBgNVHSMEGDAWgBShhPlK1WpQ7b7C
LUA43Temo5je0jAPBgNVHRMBAf8EBTADAQH/MAoGCCqGSM49BAMCA0kAMEYCIQCx
EDvDneY2tTtrCq4pNXNLtu9zU97lhjYgWdcvGA4nLwIhAKlF9Dq788HnEsHY/vE/
nGP7YAAcrGDk6xk0cXXgZzSn
-----END CERTIFICATE-----
`;
const KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg21mx6/JHU0VakJDz
G8sss+3qFIJIrRWiS+cWbwDnymmhRANCAAQC/1rAzBIaJnn6GHF9GkkVUvHHhOLW
onXwAK+Ikjug1MIJT3jvg3+JolmY9nlXHsOzjgG4eav1UJMTnj7SFj8j
-----END PRIVATE KEY-----
`;
/** A key that does not belong to {@link CERT}. */
const OTHER_KEY = `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgmLN/bRNgqyPcENV9
mVLHLolJO0gMr9NgbbNewFx2vFmhRANCAARQNx6qSk0Q6NnAucA/1l6QqTr06D2V
81SH4zpJPsK3/dH/GoQLOrIN2TqNEx4qEBFkkvCkhH73+ssnLU1HMCG1
-----END PRIVATE KEY-----
`;

describe("registrar etcd TLS and auth flags", () => {
  const dir = mkdtempSync(join(tmpdir(), "aether-flags-"));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const ca = file("ca.crt", CERT);
  const cert = file("tls.crt", CERT);
  const key = file("tls.key", KEY);
  const otherKey = file("other.key", OTHER_KEY);
  const password = file("password", "s3cret pass\n");
  const crlfPassword = file("password-crlf", "pw\r\n");
  const emptyPassword = file("password-empty", "\n");
  const empty = file("empty", "");
  const garbage = file("garbage.crt", "not a certificate\n");
  const missing = join(dir, "missing.crt");
  const subdir = join(dir, "a-directory");
  mkdirSync(subdir);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const etcd = (endpoints: string, ...more: string[]) => [
    "--cluster",
    "hub",
    "--store",
    "etcd",
    "--etcd-endpoints",
    endpoints,
    ...more,
  ];
  const HTTPS = "https://etcd-0:2379,https://etcd-1:2379";
  const none = {
    etcdCaFile: undefined,
    etcdCertFile: undefined,
    etcdKeyFile: undefined,
    etcdUsername: undefined,
    etcdPasswordFile: undefined,
  };

  const good: [string, string[], object][] = [
    ["no TLS or auth flags", etcd("http://127.0.0.1:2379"), none],
    ["https:// without a CA (the system trust store)", etcd(HTTPS), none],
    ["a CA file", etcd(HTTPS, "--etcd-ca-file", ca), { ...none, etcdCaFile: ca }],
    [
      "a client certificate without a CA file",
      etcd(HTTPS, "--etcd-cert-file", cert, "--etcd-key-file", key),
      { ...none, etcdCertFile: cert, etcdKeyFile: key },
    ],
    [
      "everything",
      etcd(
        HTTPS,
        `--etcd-ca-file=${ca}`,
        `--etcd-cert-file=${cert}`,
        `--etcd-key-file=${key}`,
        "--etcd-username=aether",
        `--etcd-password-file=${password}`,
      ),
      {
        etcdEndpoints: ["https://etcd-0:2379", "https://etcd-1:2379"],
        etcdCaFile: ca,
        etcdCertFile: cert,
        etcdKeyFile: key,
        etcdUsername: "aether",
        etcdPasswordFile: password,
      },
    ],
    [
      "user and password over plaintext",
      etcd("http://127.0.0.1:2379", "--etcd-username", "aether", "--etcd-password-file", password),
      { ...none, etcdUsername: "aether", etcdPasswordFile: password },
    ],
  ];
  for (const [name, argv, expected] of good) {
    it(`accepts ${name}`, () => expect(parseRegistrarFlags(argv)).toMatchObject(expected));
  }

  const bad: [string, string[], RegExp | string][] = [
    [
      "a certificate without a key",
      etcd(HTTPS, "--etcd-cert-file", cert),
      "--etcd-cert-file needs --etcd-key-file",
    ],
    [
      "a key without a certificate",
      etcd(HTTPS, "--etcd-ca-file", ca, "--etcd-key-file", key),
      "--etcd-key-file needs --etcd-cert-file",
    ],
    [
      "a user without a password file",
      etcd(HTTPS, "--etcd-username", "aether"),
      "--etcd-username needs --etcd-password-file",
    ],
    [
      "a password file without a user",
      etcd(HTTPS, "--etcd-password-file", password),
      "--etcd-password-file needs --etcd-username",
    ],
    [
      "an empty user",
      etcd(HTTPS, "--etcd-username=", "--etcd-password-file", password),
      "--etcd-username must not be empty",
    ],
    [
      "a CA file with the memory store",
      ["--cluster", "hub", "--etcd-ca-file", ca],
      "--etcd-ca-file is only used with --store etcd",
    ],
    [
      "a user with the memory store",
      [
        "--cluster",
        "hub",
        "--store",
        "memory",
        "--etcd-username",
        "u",
        "--etcd-password-file",
        password,
      ],
      "--etcd-username is only used with --store etcd",
    ],
    [
      "mixed http:// and https:// endpoints",
      etcd("https://etcd-0:2379,http://etcd-1:2379"),
      "--etcd-endpoints: mixes https:// and other endpoints",
    ],
    [
      "a CA file with http:// endpoints",
      etcd("http://127.0.0.1:2379", "--etcd-ca-file", ca),
      "--etcd-ca-file means TLS towards etcd: --etcd-endpoints must be https:// URLs (got http://127.0.0.1:2379)",
    ],
    [
      "a client certificate with http:// endpoints",
      etcd("http://127.0.0.1:2379", "--etcd-cert-file", cert, "--etcd-key-file", key),
      "--etcd-cert-file means TLS towards etcd",
    ],
    [
      "a missing CA file",
      etcd(HTTPS, "--etcd-ca-file", missing),
      `--etcd-ca-file ${missing}: cannot read it: ENOENT`,
    ],
    [
      "a directory as the CA file",
      etcd(HTTPS, "--etcd-ca-file", subdir),
      `--etcd-ca-file ${subdir}: cannot read it: EISDIR`,
    ],
    [
      "an empty CA file",
      etcd(HTTPS, "--etcd-ca-file", empty),
      `--etcd-ca-file ${empty}: the file is empty`,
    ],
    [
      "a CA file without a certificate",
      etcd(HTTPS, "--etcd-ca-file", garbage),
      `--etcd-ca-file ${garbage}: not a PEM certificate bundle`,
    ],
    [
      "an empty certificate file",
      etcd(HTTPS, "--etcd-cert-file", empty, "--etcd-key-file", key),
      `--etcd-cert-file ${empty}: the file is empty`,
    ],
    [
      "a missing key file",
      etcd(HTTPS, "--etcd-cert-file", cert, "--etcd-key-file", missing),
      `--etcd-key-file ${missing}: cannot read it: ENOENT`,
    ],
    [
      "a key that is not the certificate's",
      etcd(HTTPS, "--etcd-cert-file", cert, "--etcd-key-file", otherKey),
      `--etcd-cert-file ${cert} and --etcd-key-file ${otherKey} are not a PEM certificate and its private key`,
    ],
    [
      "a missing password file",
      etcd(HTTPS, "--etcd-username", "aether", "--etcd-password-file", missing),
      `--etcd-password-file ${missing}: cannot read it: ENOENT`,
    ],
    [
      "an empty password file",
      etcd(HTTPS, "--etcd-username", "aether", "--etcd-password-file", empty),
      `--etcd-password-file ${empty}: the file is empty`,
    ],
    [
      "a password file holding only a newline",
      etcd(HTTPS, "--etcd-username", "aether", "--etcd-password-file", emptyPassword),
      `--etcd-password-file ${emptyPassword}: the password is empty`,
    ],
  ];
  for (const [name, argv, message] of bad) {
    it(`rejects ${name}`, () => {
      let thrown: unknown;
      try {
        parseRegistrarFlags(argv);
      } catch (error) {
        thrown = error;
      }
      expect(thrown).toBeInstanceOf(UsageError);
      if (typeof message === "string") expect((thrown as Error).message).toContain(message);
      else expect((thrown as Error).message).toMatch(message);
    });
  }

  it("reads the files: the CA, the client certificate and key, and the password without its newline", () => {
    const config = parseRegistrarFlags(
      etcd(
        HTTPS,
        "--etcd-ca-file",
        ca,
        "--etcd-cert-file",
        cert,
        "--etcd-key-file",
        key,
        "--etcd-username",
        "aether",
        "--etcd-password-file",
        password,
      ),
    );
    if (config === "help") throw new Error("unexpected help");
    expect(readEtcdSecurity(config)).toEqual({
      credentials: {
        rootCertificate: Buffer.from(CERT),
        certChain: Buffer.from(CERT),
        privateKey: Buffer.from(KEY),
      },
      auth: { username: "aether", password: "s3cret pass" },
    });
  });
  it("trims a CRLF from the password and leaves the root certificate out without a CA file", () => {
    expect(
      readEtcdSecurity({
        etcdCertFile: cert,
        etcdKeyFile: key,
        etcdUsername: "u",
        etcdPasswordFile: crlfPassword,
      }),
    ).toEqual({
      credentials: { certChain: Buffer.from(CERT), privateKey: Buffer.from(KEY) },
      auth: { username: "u", password: "pw" },
    });
  });
  it("reads nothing without TLS or auth flags", () => {
    const config = parseRegistrarFlags(etcd(HTTPS));
    if (config === "help") throw new Error("unexpected help");
    expect(readEtcdSecurity(config)).toBeUndefined();
  });
});

describe("registrar page token flags", () => {
  const dir = mkdtempSync(join(tmpdir(), "page-token-flags-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };

  it("defaults to a key of the process's own, good for 5 minutes", () => {
    expect(parseRegistrarFlags(["--cluster", "hub"])).toMatchObject({
      pageTokenKeyFile: undefined,
      pageTokenTtlMs: 300_000,
    });
  });

  it("reads a key file (its trailing newline trimmed) and a TTL", () => {
    const path = file("key", "0123456789abcdef0123\n");
    expect(
      parseRegistrarFlags([
        "--cluster",
        "hub",
        "--page-token-key-file",
        path,
        "--page-token-ttl",
        "30s",
      ]),
    ).toMatchObject({ pageTokenKeyFile: path, pageTokenTtlMs: 30_000 });
    expect(readPageTokenKey(path).toString()).toBe("0123456789abcdef0123");
  });

  it.each([
    [
      "a short key, without printing it",
      () => file("short", "secret-ish\n"),
      /holds 10 bytes; a key needs at least 16/,
    ],
    ["a missing file", () => join(dir, "missing"), /cannot read .*missing: ENOENT/],
  ])("refuses %s", (_name, path, message) => {
    const argv = ["--cluster", "hub", "--page-token-key-file", path()];
    expect(() => parseRegistrarFlags(argv)).toThrow(UsageError);
    expect(() => parseRegistrarFlags(argv)).toThrow(message);
    expect(() => parseRegistrarFlags(argv)).not.toThrow(/secret-ish/);
  });

  it("refuses a TTL under a second", () => {
    expect(() => parseRegistrarFlags(["--cluster", "hub", "--page-token-ttl", "10ms"])).toThrow(
      /--page-token-ttl must be at least 1s/,
    );
  });
});

describe("registrar --max-version-skew", () => {
  it("defaults to 5 minutes, takes a duration, and refuses less than a second", () => {
    expect(parseRegistrarFlags(["--cluster", "hub"])).toMatchObject({ maxVersionSkewMs: 300_000 });
    expect(parseRegistrarFlags(["--cluster", "hub", "--max-version-skew", "90s"])).toMatchObject({
      maxVersionSkewMs: 90_000,
    });
    expect(() => parseRegistrarFlags(["--cluster", "hub", "--max-version-skew", "10ms"])).toThrow(
      /--max-version-skew must be at least 1s/,
    );
  });
});

describe("registrar --list-read-concurrency and --list-read-queue", () => {
  it("default to 8 running and 32 waiting, take whole numbers, and refuse anything else", () => {
    expect(parseRegistrarFlags(["--cluster", "hub"])).toMatchObject({
      listReadConcurrency: 8,
      listReadQueue: 32,
    });
    expect(
      parseRegistrarFlags([
        "--cluster",
        "hub",
        "--list-read-concurrency",
        "2",
        "--list-read-queue",
        "0",
      ]),
    ).toMatchObject({ listReadConcurrency: 2, listReadQueue: 0 });
    const cases: [string, string, RegExp][] = [
      ["--list-read-concurrency", "0", /--list-read-concurrency "0" must be a whole number from 1/],
      ["--list-read-concurrency", "1.5", /--list-read-concurrency "1.5" must be a whole number/],
      ["--list-read-queue", "-1", /--list-read-queue "-1" must be a whole number from 0/],
      ["--list-read-queue", "99999", /--list-read-queue "99999" must be a whole number/],
      ["--list-read-queue", "many", /--list-read-queue "many" must be a whole number/],
    ];
    for (const [flag, value, message] of cases) {
      expect(() => parseRegistrarFlags(["--cluster", "hub", `${flag}=${value}`])).toThrow(message);
    }
    expect(REGISTRAR_USAGE).toMatch(/--list-read-concurrency N .*\(default 8\)/);
    expect(REGISTRAR_USAGE).toMatch(/--list-read-queue N/);
  });
});

describe("registrar --mass-delete-threshold and --mass-delete-min", () => {
  it("default to more than 50% and at least 3, take a percentage or off, and refuse the rest", () => {
    expect(parseRegistrarFlags(["--cluster", "hub"])).toMatchObject({
      massDelete: { fraction: 0.5, minCount: 3 },
    });
    expect(
      parseRegistrarFlags([
        "--cluster",
        "hub",
        "--mass-delete-threshold",
        "25%",
        "--mass-delete-min",
        "3",
      ]),
    ).toMatchObject({ massDelete: { fraction: 0.25, minCount: 3 } });
    expect(
      parseRegistrarFlags(["--cluster", "hub", "--mass-delete-threshold", "off"]),
    ).toMatchObject({ massDelete: { fraction: 1, minCount: 3 } });
    expect(() =>
      parseRegistrarFlags(["--cluster", "hub", "--mass-delete-threshold", "0.5"]),
    ).toThrow(/--mass-delete-threshold "0.5" must be a percentage/);
    expect(() => parseRegistrarFlags(["--cluster", "hub", "--mass-delete-min", "0"])).toThrow(
      /--mass-delete-min "0" must be a whole number/,
    );
  });
});

describe("registrar signing flags", () => {
  const dir = mkdtempSync(join(tmpdir(), "signing-flags-"));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, content: string) => {
    const path = join(dir, name);
    writeFileSync(path, content);
    return path;
  };
  const privatePem = () =>
    generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
  const publicPem = () =>
    generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }).toString();

  it("takes a signing key, origin keys and --require-signatures", () => {
    const key = file("signing.pem", privatePem());
    const keys = file("origin-keys.yaml", JSON.stringify({ origins: { hub: [publicPem()] } }));
    expect(
      parseRegistrarFlags([
        "--cluster",
        "east",
        "--signing-key-file",
        key,
        "--origin-keys",
        keys,
        "--require-signatures",
      ]),
    ).toMatchObject({ signingKeyFile: key, originKeysFile: keys, requireSignatures: true });
    expect(parseRegistrarFlags(["--cluster", "east"])).toMatchObject({
      signingKeyFile: undefined,
      originKeysFile: undefined,
      requireSignatures: false,
    });
  });

  it.each([
    [
      "a signing key that is a public key, naming the file and not its contents",
      () => ["--signing-key-file", file("public.pem", publicPem())],
      /--signing-key-file: .*public\.pem: not a PEM private key/,
    ],
    [
      "a missing signing key",
      () => ["--signing-key-file", join(dir, "missing.pem")],
      /--signing-key-file: cannot read .*missing\.pem: ENOENT/,
    ],
    [
      "origin keys with a private key in them",
      () => [
        "--origin-keys",
        file("bad-keys.yaml", JSON.stringify({ origins: { hub: [privatePem()] } })),
      ],
      /--origin-keys: .*bad-keys\.yaml: origins\.hub\[0\] is not one PEM public key/,
    ],
    [
      "--require-signatures without --origin-keys",
      () => ["--require-signatures"],
      /--require-signatures needs --origin-keys/,
    ],
  ])("refuses %s", (_name, flags, message) => {
    const argv = ["--cluster", "east", ...flags()];
    expect(() => parseRegistrarFlags(argv)).toThrow(UsageError);
    expect(() => parseRegistrarFlags(argv)).toThrow(message);
    expect(() => parseRegistrarFlags(argv)).not.toThrow(/MC4CAQAw|MCowBQYD/);
  });
});

describe("registrar fleet-status flags", () => {
  it("defaults: the host's replica name, 1s interval, 15s heartbeat, no local source", () => {
    const config = parseRegistrarFlags(["--cluster", "hub"]);
    if (config === "help") throw new Error("help");
    expect(config.replicaId).toBe(replicaNameFromHost(hostname()));
    expect(config).toMatchObject({
      statusIntervalMs: 1_000,
      statusHeartbeatMs: 15_000,
      localSource: undefined,
    });
  });
  it("parses the replica, the intervals and both local sources", () => {
    expect(
      parseRegistrarFlags([
        "--cluster=west",
        "--replica-id=west-0.pod",
        "--status-interval=250ms",
        "--status-heartbeat=5s",
        "--local-source=dir:/etc/local",
      ]),
    ).toMatchObject({
      replicaId: "west-0.pod",
      statusIntervalMs: 250,
      statusHeartbeatMs: 5_000,
      localSource: { kind: "dir", path: "/etc/local" },
    });
    expect(
      parseRegistrarFlags(["--cluster=west", "--local-source=kubernetes", "--kubeconfig=/k"]),
    ).toMatchObject({ localSource: { kind: "kubernetes" }, kubeconfig: "/k" });
  });
  it.each([
    [["--replica-id", "West_0"], /--replica-id: replica name "West_0" must be/],
    [["--replica-id", ""], /--replica-id: replica name "" must be/],
    [["--status-interval", "10ms"], /--status-interval must be at least 100ms/],
    [["--status-heartbeat", "500ms"], /--status-heartbeat must be at least 1s/],
    [["--status-interval", "5s", "--status-heartbeat", "2s"], /at least --status-interval/],
    [["--local-source", "dir:"], /--local-source "dir:" must be dir:PATH or kubernetes/],
    [["--local-source", "etcd"], /must be dir:PATH or kubernetes/],
    [["--local-source", "dir:/d", "--kubeconfig", "/k"], /--kubeconfig is only used with/],
  ])("refuses %j", (argv, message) => {
    expect(() => parseRegistrarFlags(["--cluster", "hub", ...argv])).toThrow(UsageError);
    expect(() => parseRegistrarFlags(["--cluster", "hub", ...argv])).toThrow(message);
  });
  it("documents them in --help", () => {
    for (const flag of [
      "--replica-id",
      "--status-interval",
      "--status-heartbeat",
      "--local-source",
    ]) {
      expect(REGISTRAR_USAGE).toContain(flag);
    }
  });
});
