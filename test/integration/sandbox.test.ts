/**
 * The sandbox (`npm start`) as a new user runs it: one OS process started
 * the way the start script does (`node --import tsx services/sandbox/main.ts`;
 * the flag and etcd tests run the tests' compiled build),
 * on free ports and over a temp copy of `examples/`, with mutual TLS (the
 * default; its PKI in a temp `--pki-dir`). Its printed URLs are read, the
 * agents' route tables checked, an edit of a copied manifest awaited in
 * them, and SIGINT must stop everything: exit 0, every port closed, no child
 * process left, the temp state removed. Over mutual TLS: a client without
 * a certificate, and plaintext, are refused; another cluster's agent is
 * denied; every printed command (aetherctl, buf curl, curl) is run and
 * works, the aetherctl ones after the printed `. operator.env` line in the
 * same shell. The printed console URL serves the console and forwards a
 * Connect call without a certificate to the hub. The etcd run uses
 * `--plaintext`.
 */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { cp, mkdtemp, readdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { runAetherctlInProcess } from "../support/aetherctl-in-process.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { mainEntry } from "../support/process-entry.js";
import {
  aetherVariablesAfter,
  changesShell,
  type PrintedLine,
  printedSession,
  runPrinted,
  shellWords,
  tlsGet,
} from "../support/sandbox-commands.js";
import {
  interruptAndCheck,
  SANDBOX_MAIN as MAIN,
  type SandboxProcess,
  sandboxes,
  started,
  startSandbox,
  stopQuietly,
} from "../support/sandbox-process.js";
import { waitFor } from "../support/wait.js";

const ROOT = resolve(import.meta.dirname, "../..");

/** An entry of an agent's `/routes` (the fields these tests read). */
interface RoutesEntry {
  readonly service: string;
  readonly source: "local" | "imported";
  readonly origin: string;
  readonly version: string;
  readonly projection: {
    readonly httpFilters?: { readonly namespace?: string; readonly name?: string }[];
    readonly backendTls?: { readonly hostname?: string; readonly policyName?: string }[];
    readonly virtualHosts?: { readonly hostnames?: string[]; readonly name?: string }[];
    readonly routes?: {
      readonly name?: string;
      readonly rules?: {
        readonly name?: string;
        readonly retry?: { readonly attempts?: number };
        readonly backends?: { service?: string; weight?: number }[];
      }[];
    }[];
  };
}

/** An agent's `/routes` document (the fields these tests read). */
interface RoutesDocument {
  readonly meshDefaults?: { readonly origin: string; readonly config: { readonly name?: string } };
  readonly services: RoutesEntry[];
}

async function routesDocumentOf(agentUrl: string): Promise<RoutesDocument> {
  const response = await fetch(`${agentUrl}/routes`);
  expect(response.status).toBe(200);
  return (await response.json()) as RoutesDocument;
}

async function routesOf(agentUrl: string): Promise<RoutesEntry[]> {
  return (await routesDocumentOf(agentUrl)).services;
}

/** Whether a manifest under `dir` (recursively) declares a MeshConfig. */
async function declaresMeshConfig(dir: string): Promise<boolean> {
  const files = await readdir(dir, { recursive: true, withFileTypes: true });
  for (const file of files) {
    if (!file.isFile() || !/\.ya?ml$/.test(file.name)) continue;
    const text = await readFile(join(file.parentPath, file.name), "utf8");
    if (/^kind: *MeshConfig\s*$/m.test(text)) return true;
  }
  return false;
}

/** The weights of shop/checkout's canary rule in an agent's table. */
function canaryWeights(entries: readonly RoutesEntry[]): Record<string, number | undefined> {
  const checkout = entries.find((e) => e.service === "shop/checkout");
  const canary = checkout?.projection.routes?.find((r) => r.name === "checkout-canary");
  const backends = canary?.rules?.[1]?.backends ?? [];
  return Object.fromEntries(backends.map((b) => [b.service ?? "", b.weight]));
}

/** The cluster GetConfigStatus answers with through the console at `url` (Connect protocol, no certificate). */
async function consoleClusterOf(url: string): Promise<string> {
  const transport = createConnectTransport({ baseUrl: url, httpVersion: "1.1" });
  const status = await createClient(ConfigService, transport).getConfigStatus({});
  return status.cluster;
}

afterAll(async () => {
  await Promise.all([...sandboxes].map(stopQuietly));
  for (const child of started) {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  }
});

describe("the sandbox (npm start) on the embedded store, over mutual TLS (the default)", () => {
  let examples: string;
  let pkiDir: string;
  let sandbox: SandboxProcess;
  /** A file of the sandbox's PKI. */
  const pki = (name: string) => join(pkiDir, name);

  beforeAll(async () => {
    examples = await mkdtemp(join(tmpdir(), "aether-sandbox-examples-"));
    pkiDir = join(await mkdtemp(join(tmpdir(), "aether-sandbox-pki-")), "pki");
    await cp(resolve(ROOT, "examples"), examples, { recursive: true });
    // Through tsx, as `npm start` runs it (the other tests run the compiled build).
    sandbox = await startSandbox(
      [
        ...["--base-port", "0", "--examples", examples, "--pki-dir", pkiDir],
        ...["--signing-dir", join(pkiDir, "..", "signing")],
      ],
      { tsx: true },
    );
  }, 40_000);

  afterAll(async () => {
    if (sandbox !== undefined) await stopQuietly(sandbox);
    await rm(examples, { recursive: true, force: true });
    if (pkiDir !== undefined) await rm(join(pkiDir, ".."), { recursive: true, force: true });
  });

  it("prints a URL for the hub, both spokes and both agents, and each one is ready", async () => {
    expect([...sandbox.registrars.keys()]).toEqual(["hub", "east", "west"]);
    expect([...sandbox.agents.keys()]).toEqual(["east", "west"]);
    for (const url of sandbox.registrars.values()) expect(url).toMatch(/^https:\/\//);
    // Probes need no certificate: the registrars' admin ports are plain HTTP.
    for (const url of [...sandbox.admin.values(), ...sandbox.agents.values()]) {
      expect((await fetch(`${url}/readyz`)).status, url).toBe(200);
    }
    const text = sandbox.lines.join("\n");
    expect(text).toContain(`certificates: ${pkiDir} (made now; kept for the next run)`);
    expect(text).toContain("npm run aetherctl -- --registrar https://");
    expect(text).toContain(`npx buf curl --protocol grpc --cacert ${pki("ca-bundle.pem")}`);
  });

  it("serves the console at the printed URL: its index.html, and a Connect call through it (no certificate) reaches the hub as the operator", async () => {
    expect(sandbox.console).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    const page = await fetch(sandbox.console);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toMatch(/^text\/html/);
    expect(await page.text()).toMatch(/<script type="module"[^>]* src="\/assets\//);
    expect(await consoleClusterOf(sandbox.console)).toBe("hub");
  });

  it("every registrar's ConfigService port refuses plaintext and a client without a certificate, and serves the operator's", async () => {
    const ca = pki("ca-bundle.pem");
    const operator = { ca, cert: pki("operator.crt"), key: pki("operator.key") };
    for (const url of sandbox.registrars.values()) {
      await expect(tlsGet(url, "/readyz", { ca }), url).rejects.toThrow();
      await expect(fetch(`${url.replace("https:", "http:")}/readyz`), url).rejects.toThrow();
      expect(await tlsGet(url, "/readyz", operator), url).toEqual({ status: 200, body: "ready\n" });
    }
  });

  it("writes the operator's environment file next to the PKI: absolute paths of its SVID and all three bundles, no key material", async () => {
    const text = await readFile(pki("operator.env"), "utf8");
    expect(text).not.toContain("-----BEGIN");
    expect(text.split("\n").filter((line) => line.startsWith("export "))).toEqual([
      `export AETHER_TLS_CERT_FILE=${pki("operator.crt")}`,
      `export AETHER_TLS_KEY_FILE=${pki("operator.key")}`,
      `export AETHER_TRUST_DOMAIN_BUNDLE=${["hub", "east", "west"].map((c) => `${c}.mesh=${pki(`${c}.mesh.pem`)}`).join(",")}`,
      `export AETHER_ORIGIN_KEYS=${join(pkiDir, "..", "signing", "origin-keys.yaml")}`,
    ]);
  });

  it("signs by default: the hub's key (mode 0600) signs every projection, the spokes and agents require signatures, aetherctl get says verified", async () => {
    const signingDir = join(pkiDir, "..", "signing");
    const keyFile = join(signingDir, "hub-signing.key");
    expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    const keyId = /the hub signs every projection with key ([0-9a-f]{16})/.exec(
      sandbox.lines.join("\n"),
    )?.[1];
    expect(keyId).toMatch(/^[0-9a-f]{16}$/);
    const env = {
      env: {
        AETHER_TLS_CERT_FILE: pki("operator.crt"),
        AETHER_TLS_KEY_FILE: pki("operator.key"),
        AETHER_TRUST_DOMAIN_BUNDLE: `east.mesh=${pki("east.mesh.pem")}`,
        AETHER_ORIGIN_KEYS: join(signingDir, "origin-keys.yaml"),
      },
    };
    const east = sandbox.registrars.get("east") as string;
    const got = await runAetherctlInProcess(
      ["--registrar", east, "get", "shop/checkout", "-o", "json"],
      env,
    );
    expect(got.code, got.stderr).toBe(0);
    expect(JSON.parse(got.stdout).signatureCheck).toEqual({
      keyId,
      algorithm: "ed25519",
      state: "verified",
    });
    const status = await runAetherctlInProcess(["--registrar", east, "status", "-o", "json"], env);
    expect(status.code, status.stderr).toBe(0);
    const origins = JSON.parse(status.stdout).origins as {
      origin: string;
      projections: number;
      signedProjections?: number;
    }[];
    const hub = origins.find((o) => o.origin === "hub");
    expect(hub?.projections).toBeGreaterThan(0);
    expect(hub?.signedProjections).toBe(hub?.projections);
  });

  it("runs every printed line as pasted into one shell: `. operator.env` once, then curl, buf curl and aetherctl list through bash, the other aetherctl commands in process with the variables that shell holds", async () => {
    const session = printedSession(sandbox.commands);
    expect(sandbox.commands.filter(changesShell)).toEqual([`. ${pki("operator.env")}`]);
    const ctl = session.filter((line) => line.command.startsWith("npm run aetherctl -- "));
    expect(ctl.length).toBeGreaterThanOrEqual(7);
    for (const { command, before } of ctl) {
      expect(command).not.toMatch(/--tls-|--trust-domain-bundle/);
      expect(before, command).toEqual([`. ${pki("operator.env")}`]);
    }
    const asPrinted = session.filter(
      ({ command }) => !command.startsWith("npm run") || command.endsWith(" list"),
    );
    expect(asPrinted.length).toBeGreaterThanOrEqual(7);
    const list = ctl.find(({ command }) => command.endsWith(" list")) as PrintedLine;
    const [runs, withoutEnv] = await Promise.all([
      Promise.all(asPrinted.map((line) => runPrinted(line, ROOT))),
      // The same aetherctl line in a shell that did not load the file: no client certificate.
      runPrinted({ command: list.command, before: [] }, ROOT),
    ]);
    const outputs = new Map(asPrinted.map(({ command }, i) => [command, runs[i]]));
    for (const [command, result] of outputs) {
      expect({ command, ...result }).toMatchObject({ code: 0 });
    }
    expect(withoutEnv).toMatchObject({
      code: 1,
      stderr: expect.stringContaining("aetherctl: tls: "),
    });
    const output = (pattern: RegExp) =>
      [...outputs].find(([command]) => pattern.test(command))?.[1]?.stdout ?? "";
    expect(output(/aetherctl .* list$/)).toMatch(/shop\/checkout\s+hub\s/);
    expect(output(/\/readyz$/)).toBe("ready\n");
    expect(output(/--list-methods/)).toContain("aether.registry.v1.ConfigService/ListAllConfig");
    expect(output(/^npx buf curl .*ListAllConfig$/)).toContain('"originCluster": "hub"');
    expect(JSON.parse(output(/^curl .*ListAllConfig /)).projections[0].service).toBe(
      "shop/checkout",
    );

    const env = await aetherVariablesAfter(list.before, ROOT);
    expect(Object.keys(env).sort()).toEqual([
      "AETHER_ORIGIN_KEYS",
      "AETHER_TLS_CERT_FILE",
      "AETHER_TLS_KEY_FILE",
      "AETHER_TRUST_DOMAIN_BUNDLE",
    ]);
    for (const { command, before } of ctl.filter((line) => !line.command.endsWith(" list"))) {
      const args = await shellWords(command.slice("npm run aetherctl -- ".length));
      expect(await aetherVariablesAfter(before, ROOT)).toEqual(env);
      if (args.at(-1) === "watch") {
        const stop = new AbortController();
        const watched = await runAetherctlInProcess(args, {
          env,
          signal: stop.signal,
          onStdout: (printed) => printed.includes("SYNCED") && stop.abort(),
        });
        expect({ command, ...watched }).toMatchObject({
          code: 0,
          stdout: expect.stringMatching(/SNAPSHOT[\s\S]*SYNCED/),
        });
        continue;
      }
      const result = await runAetherctlInProcess(args, { env });
      expect({ command, ...result }).toMatchObject({ code: 0, stderr: "" });
      if (args.includes("get")) expect(result.stdout).toMatch(/^signed: .*\(ed25519\): verified$/m);
    }
    // The file carries every trust domain: the same variables reach the hub and west too.
    for (const cluster of ["hub", "west"]) {
      const url = sandbox.registrars.get(cluster) as string;
      const listed = await runAetherctlInProcess(["--registrar", url, "list"], { env });
      expect({ cluster, ...listed }).toMatchObject({ code: 0, stderr: "" });
    }
  }, 60_000);

  it("the printed aetherctl fleet shows every cluster in sync and west's local override of shop/checkout as drift", async () => {
    const line = printedSession(sandbox.commands).find(({ command }) =>
      command.endsWith(" fleet"),
    ) as PrintedLine;
    expect(line).toBeDefined();
    const args = await shellWords(line.command.slice("npm run aetherctl -- ".length));
    const env = await aetherVariablesAfter(line.before, ROOT);
    /** The service rows of the table: service → its per-cluster cells. */
    const rows = (stdout: string) =>
      new Map(
        stdout
          .split("\n")
          .filter((row) => /^(@mesh|[a-z-]+\/[a-z-]+) /.test(row))
          .map((row) => [row.split(/\s+/)[0] as string, row.match(/\b(east|hub|west):\S+/g) ?? []]),
      );
    let last = "";
    await waitFor(
      async () => {
        const result = await runAetherctlInProcess(args, { env });
        last = result.stdout;
        const cells = rows(last);
        return (
          result.code === 0 &&
          cells.size >= 5 &&
          [...cells].every(
            ([service, row]) =>
              row.join() ===
              (service === "shop/checkout"
                ? "east:in_sync,hub:in_sync,west:drifted"
                : "east:in_sync,hub:in_sync,west:in_sync"),
          )
        );
      },
      15_000,
      "aetherctl fleet to show every cluster in sync and west drifted on shop/checkout",
    ).catch((error: Error) => {
      throw new Error(`${error.message}; last output:\n${last}`);
    });
    expect(last).toMatch(/^west\s+no\s+1\s+1 in_sync\s+4 in_sync, 1 drifted\s/m);
  }, 30_000);

  it("a registrar denies another cluster's agent (PermissionDenied naming its ID) and serves its own", async () => {
    const westAgent = { cert: pki("west-agent.crt"), key: pki("west-agent.key") };
    // A Connect GET: no request body, so the refusal cannot race the client's write.
    const status =
      "/aether.registry.v1.ConfigService/GetConfigStatus?connect=v1&encoding=json&message=%7B%7D";
    const east = sandbox.registrars.get("east") as string;
    const denied = await tlsGet(east, status, { ca: pki("east.mesh.pem"), ...westAgent });
    expect(denied.status).toBe(403);
    expect(JSON.parse(denied.body)).toMatchObject({
      code: "permission_denied",
      message: expect.stringContaining("spiffe://west.mesh/ns/aether-system/sa/aether-agent"),
    });
    const served = await runAetherctlInProcess([
      ...["--registrar", sandbox.registrars.get("west") as string],
      ...["--tls-cert-file", westAgent.cert, "--tls-key-file", westAgent.key],
      ...["--trust-domain-bundle", `west.mesh=${pki("west.mesh.pem")}`],
      ...["--registrar-spiffe-id", "spiffe://west.mesh/ns/aether-system/sa/aether-registrar"],
      "list",
    ]);
    expect({ ...served }).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/identity\/users\s+hub\s/),
    });
  });

  it("prints no route rejections and no unreadable manifests for the examples", () => {
    expect(sandbox.lines.filter((line) => line.startsWith("!!"))).toEqual([]);
  });

  it("east's /routes holds its whole dependency set, every service authored by the hub", async () => {
    const entries = await routesOf(sandbox.agents.get("east") as string);
    expect(entries.map((e) => [e.service, e.source, e.origin])).toEqual([
      ["payments/ledger", "imported", "hub"],
      ["shop/cart", "imported", "hub"],
      ["shop/checkout", "imported", "hub"],
    ]);
    expect(canaryWeights(entries)).toEqual({ "shop/checkout-v1": 90, "shop/checkout-v2": 10 });
    // The hub's VirtualHost for shop/cart reaches east's agent with the projection.
    const cart = entries.find((e) => e.service === "shop/cart");
    expect(cart?.projection.virtualHosts).toEqual([
      {
        hostnames: ["*.cart.shop.example", "cart.shop.example"],
        namespace: "shop",
        name: "cart-names",
      },
    ]);
  });

  it("west's /routes holds its dependency set, with shop/checkout decided by west's local override", async () => {
    const entries = await routesOf(sandbox.agents.get("west") as string);
    expect(entries.map((e) => [e.service, e.source, e.origin])).toEqual([
      ["identity/users", "imported", "hub"],
      ["payments/ledger", "imported", "hub"],
      ["shop/checkout", "local", "west"],
    ]);
    const checkout = entries.find((e) => e.service === "shop/checkout");
    expect(checkout?.projection.routes?.map((r) => r.name)).toEqual(["checkout-west-no-canary"]);
    // The hub's BackendTLSPolicy for identity/users reaches west's agent with the projection.
    const users = entries.find((e) => e.service === "identity/users");
    expect(users?.projection.backendTls).toMatchObject([
      { hostname: "users.identity.example", policyName: "users-tls" },
    ]);
  });

  it("prints one example each of the HTTP filters, backend TLS, retry policy and VirtualHost names the agents' /routes carry, and the mesh defaults exactly when examples/mesh has a MeshConfig", async () => {
    const east = await routesDocumentOf(sandbox.agents.get("east") as string);
    const west = await routesDocumentOf(sandbox.agents.get("west") as string);
    const text = sandbox.lines.join("\n");
    const line = (label: string) =>
      sandbox.lines.find((l) => new RegExp(`^  ${label} {2,}`).test(l)) ?? "";
    const checkout = east.services.find((e) => e.service === "shop/checkout")?.projection;
    const filter = checkout?.httpFilters?.[0];
    expect(filter?.name).toBeTruthy();
    expect(line("http filters")).toContain(
      `shop/checkout (east): ${filter?.namespace}/${filter?.name}`,
    );
    const users = west.services.find((e) => e.service === "identity/users")?.projection;
    expect(line("backend tls")).toContain(
      `identity/users (west): SNI ${users?.backendTls?.[0]?.hostname}`,
    );
    const canary = checkout?.routes?.find((r) => r.name === "checkout-canary");
    const retried = canary?.rules?.find((r) => r.retry !== undefined);
    expect(retried?.retry?.attempts).toBeGreaterThan(0);
    expect(line("retry")).toContain(`shop/checkout-canary rule ${retried?.name}`);
    expect(line("retry")).toContain(`${retried?.retry?.attempts} attempts`);
    const cart = east.services.find((e) => e.service === "shop/cart")?.projection;
    expect(line("virtual hosts")).toBe(
      `  virtual hosts  shop/cart (east): ${cart?.virtualHosts?.[0]?.hostnames?.join(", ")}`,
    );
    if (await declaresMeshConfig(join(examples, "mesh"))) {
      expect(east.meshDefaults).toMatchObject({ origin: "hub", config: { name: "default" } });
      expect(west.meshDefaults).toEqual(east.meshDefaults);
      expect(line("mesh defaults")).toMatch(
        /^ {2}mesh defaults {2}hub's MeshConfig default \(east\): /,
      );
    } else {
      expect(east.meshDefaults).toBeUndefined();
      expect(text).not.toContain("mesh defaults");
    }
  });

  it("an edit of a manifest under --examples reaches east's /routes within a second; west keeps its local override", async () => {
    const westBefore = await routesOf(sandbox.agents.get("west") as string);
    const file = join(examples, "mesh/shop/checkout-routes.yaml");
    const text = await readFile(file, "utf8");
    expect(text).toContain("weight: 90");
    const edited = text.replace("weight: 90", "weight: 50").replace("weight: 10", "weight: 50");
    const east = sandbox.agents.get("east") as string;
    const fiftyFifty = { "shop/checkout-v1": 50, "shop/checkout-v2": 50 };
    // Saved the way editors do (a new file renamed over the old), so no half-written file is read.
    const temp = join(examples, "mesh/shop/.checkout-routes.yaml.swp");
    await writeFile(temp, edited);
    const t0 = performance.now();
    await rename(temp, file);
    await waitFor(
      async () =>
        JSON.stringify(canaryWeights(await routesOf(east))) === JSON.stringify(fiftyFifty),
      5_000,
      "east's /routes to show the edited weights",
    );
    const elapsedMs = performance.now() - t0;
    expect(elapsedMs).toBeLessThan(1_000);
    await sandbox.waitForLine((line) =>
      line.includes("agent east: shop/checkout: imported from hub"),
    );
    const westAfter = await routesOf(sandbox.agents.get("west") as string);
    expect(westAfter.find((e) => e.service === "shop/checkout")).toEqual(
      westBefore.find((e) => e.service === "shop/checkout"),
    );
  });

  it("SIGINT stops everything: exit 0, every port closed, no child process left, the temp state removed", async () => {
    await interruptAndCheck(sandbox);
  });
});

describe("the sandbox with --store etcd", () => {
  let etcd: EtcdHandle;

  beforeAll(async () => {
    etcd = await startEtcd();
  }, 30_000);

  afterAll(async () => {
    await Promise.all([...sandboxes].map(stopQuietly));
    await etcd?.stop();
  });

  it("runs the same topology on a real etcd with --plaintext: both agents get the hub's config, aetherctl lists it over plain HTTP, SIGINT exits 0", async () => {
    const sandbox = await startSandbox([
      "--plaintext",
      "--base-port",
      "0",
      "--store",
      "etcd",
      "--etcd-endpoints",
      etcd.endpoint,
      "--etcd-prefix",
      `/sandbox-test-${process.pid}/aether/v1`,
    ]);
    expect(sandbox.lines[0]).toContain(`on etcd at ${etcd.endpoint}`);
    expect(await consoleClusterOf(sandbox.console)).toBe("hub");
    for (const url of sandbox.registrars.values()) {
      expect((await fetch(`${url}/readyz`)).status, url).toBe(200);
    }
    expect(sandbox.commands.filter(changesShell)).toEqual([]);
    expect(sandbox.lines.join("\n")).not.toContain("operator.env");
    // Without the operator's environment file, the printed commands name the origin keys.
    const list = sandbox.commands.find((c) => / list --origin-keys \S+$/.test(c)) as string;
    expect(list).toMatch(/^npm run aetherctl -- --registrar http:\/\/\S+ list --origin-keys \S+$/);
    const listed = await runAetherctlInProcess(await shellWords(list.slice(21)));
    expect({ ...listed }).toMatchObject({
      code: 0,
      stdout: expect.stringMatching(/shop\/checkout\s+hub\s/),
    });
    const east = await routesOf(sandbox.agents.get("east") as string);
    const west = await routesOf(sandbox.agents.get("west") as string);
    expect(east.map((e) => `${e.service} ${e.source} ${e.origin}`)).toEqual([
      "payments/ledger imported hub",
      "shop/cart imported hub",
      "shop/checkout imported hub",
    ]);
    expect(west.map((e) => `${e.service} ${e.source} ${e.origin}`)).toEqual([
      "identity/users imported hub",
      "payments/ledger imported hub",
      "shop/checkout local west",
    ]);
    await interruptAndCheck(sandbox);
  });
});

/** Runs the sandbox with `args` (and `env` added) to its exit; its code and standard error. */
async function runToExit(
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<{ code: number; stderr: string }> {
  const child = spawn(process.execPath, [...mainEntry(MAIN), ...args], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  started.add(child);
  let stderr = "";
  child.stderr.on("data", (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const [code] = await once(child, "exit");
  return { code: code as number, stderr };
}

describe("the sandbox's flags", () => {
  it("exits 2 with the usage text for a bad flag", async () => {
    const { code, stderr } = await runToExit(["--store", "bogus"]);
    expect(code).toBe(2);
    expect(stderr).toContain('--store "bogus" must be memory or etcd');
    expect(stderr).toContain("Usage: npm start -- [flags]");
  });

  it("without openssl (and no PKI to reuse) stops with one line: install openssl or run with --plaintext", async () => {
    const pkiDir = join(await mkdtemp(join(tmpdir(), "aether-sandbox-nopki-")), "pki");
    try {
      const args = ["--base-port", "0", "--pki-dir", pkiDir];
      const { code, stderr } = await runToExit(args, { OPENSSL_BIN: "/nonexistent/openssl" });
      expect(code).toBe(1);
      expect(stderr.trimEnd().split("\n")).toEqual([
        expect.stringMatching(
          /^aether-sandbox: cannot start: openssl not found .*install openssl.* or run with --plaintext$/,
        ),
      ]);
    } finally {
      await rm(join(pkiDir, ".."), { recursive: true, force: true });
    }
  });
});
