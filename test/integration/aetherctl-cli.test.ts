/**
 * `aetherctl` as an operator runs it: a separate OS process (its main from
 * the tests' compiled build, and once through bin/aetherctl.js and tsx) against
 * real registrar processes: one on the embedded store seeded with --seed, and
 * others over a real etcd holding two origins' projections, for conflicts
 * (federated) and rejections (control cluster), and for a live watch.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:net";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import { fromJson, type JsonObject } from "@bufbuild/protobuf";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";
import { createEtcdStore } from "../../services/registrar/store/etcd-store.js";
import {
  grpcProjection,
  removeSeedFiles,
  stamped,
  startSeededRegistrar,
} from "../interop/fixtures.js";
import { type EtcdHandle, startEtcd } from "../support/etcd.js";
import { mainEntry } from "../support/process-entry.js";
import { makeProjection, versionAt } from "../support/projections.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
  stopAllRegistrars,
} from "../support/registrar-process.js";
import { waitFor } from "../support/wait.js";

const ROOT = resolve(import.meta.dirname, "../..");
const MAIN = resolve(ROOT, "clients/aetherctl/main.ts");
const BIN = resolve(ROOT, "bin/aetherctl.js");
const VERSION = "2026-11-29T12:00:00Z";

/** aetherctl processes not yet exited, killed after each test whatever happened. */
const children = new Set<ChildProcess>();

interface Result {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function spawnAetherctl(args: readonly string[], entry = MAIN): ChildProcess {
  // main.ts runs from the tests' compiled build; bin/aetherctl.js loads the sources through tsx.
  const node = entry === MAIN ? mainEntry(MAIN) : ["--import", "tsx", entry];
  const child = spawn(process.execPath, [...node, ...args], {
    cwd: ROOT,
    env: { ...process.env, AETHER_REGISTRAR: undefined, NO_COLOR: "1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  child.once("exit", () => children.delete(child));
  return child;
}

/** Runs aetherctl to completion and resolves with its exit code and output. */
async function aetherctl(args: readonly string[], entry = MAIN): Promise<Result> {
  const child = spawnAetherctl(args, entry);
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk: Buffer) => {
    stdout += chunk.toString("utf8");
  });
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr += chunk.toString("utf8");
  });
  const [code] = (await once(child, "close")) as [number | null];
  return { code, stdout, stderr };
}

/** Runs aetherctl against `registrar`. */
function ctl(registrar: { url: string }, ...args: string[]): Promise<Result> {
  return aetherctl(["--registrar", registrar.url, ...args]);
}

/** The data rows of a table (the lines after the header), split into cells. */
function rows(table: string): string[][] {
  return table
    .trimEnd()
    .split("\n")
    .slice(1)
    .map((line) => line.split(/ {2,}/));
}

/** A loopback URL nothing listens on (a port that was free a moment ago). */
async function deadUrl(): Promise<string> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const address = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return `http://127.0.0.1:${address.port}`;
}

/** The checkout projection of the seeded registrar: a header match, a redirect, a 90/10 split. */
const CHECKOUT: JsonObject = {
  service: "shop/checkout",
  version: VERSION,
  routes: [
    {
      kind: "ROUTE_KIND_HTTP",
      namespace: "shop",
      name: "checkout-canary",
      creationTime: "2026-11-01T09:00:00Z",
      role: "ROUTE_ROLE_PRODUCER",
      parentRefs: [{ service: "shop/checkout", port: 8080 }],
      rules: [
        {
          name: "beta-testers",
          matches: [
            {
              path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/cart" },
              headers: [{ type: "STRING_MATCH_TYPE_EXACT", name: "x-beta", value: "true" }],
            },
          ],
          backends: [{ service: "shop/checkout-v2", port: 8080, weight: 1 }],
        },
        {
          name: "moved",
          matches: [{ path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/old" } }],
          filters: [
            {
              requestRedirect: {
                scheme: "https",
                path: { type: "PATH_MODIFIER_TYPE_REPLACE_PREFIX_MATCH", value: "/new" },
                statusCode: 301,
              },
            },
          ],
        },
        {
          matches: [{ path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/" } }],
          filters: [{ requestHeaderModifier: { set: [{ name: "x-routed-by", value: "aether" }] } }],
          backends: [
            { service: "shop/checkout-v1", port: 8080, weight: 90 },
            { service: "shop/checkout-v2", port: 8080, weight: 10 },
          ],
          timeouts: { request: "10s" },
        },
      ],
    },
  ],
};

const LEDGER = grpcProjection("payments/ledger", VERSION);

let seeded: RegistrarProcess;
let etcd: EtcdHandle;
const stores: ConfigStore[] = [];
let prefixCounter = 0;

beforeAll(async () => {
  [seeded, etcd] = await Promise.all([
    startSeededRegistrar("dev", [CHECKOUT, LEDGER]),
    startEtcd(),
  ]);
}, 30_000);
afterEach(async () => {
  await Promise.all(
    [...children].map(async (child) => {
      child.kill("SIGKILL");
      if (child.exitCode === null && child.signalCode === null) await once(child, "exit");
    }),
  );
});
afterAll(async () => {
  await stopAllRegistrars();
  await Promise.all(stores.splice(0).map((store) => store.close()));
  await etcd?.stop();
  await removeSeedFiles();
});

describe("aetherctl explain and a pathological regex", () => {
  it("decides in linear time: /(a+)+$ against a 40-character path (a backtracking engine never finishes)", async () => {
    const search: JsonObject = {
      service: "shop/search",
      version: VERSION,
      routes: [
        {
          kind: "ROUTE_KIND_HTTP",
          namespace: "shop",
          name: "search",
          creationTime: "2026-11-01T09:00:00Z",
          role: "ROUTE_ROLE_PRODUCER",
          parentRefs: [{ service: "shop/search" }],
          rules: [
            {
              matches: [{ path: { type: "PATH_MATCH_TYPE_REGULAR_EXPRESSION", value: "/(a+)+$" } }],
              backends: [{ service: "shop/search-v1", port: 80, weight: 1 }],
            },
          ],
        },
      ],
    };
    const registrar = await startSeededRegistrar("regex", [search]);
    const path = `/${"a".repeat(40)}b`;
    const startedAt = Date.now();
    const miss = await ctl(
      registrar,
      "explain",
      "--from-namespace",
      "web",
      "GET",
      `http://search.shop${path}`,
    );
    const hit = await ctl(
      registrar,
      "explain",
      "--from-namespace",
      "web",
      "GET",
      `http://search.shop/${"a".repeat(40)}`,
    );
    // Each call is a whole process start (about a second); the match itself is immediate.
    expect(Date.now() - startedAt).toBeLessThan(20_000);
    expect(miss.code).toBe(0);
    expect(miss.stdout).toMatch(/decision: +no-route, status 404/);
    expect(hit.code).toBe(0);
    expect(hit.stdout).toContain("backend:     shop/search-v1:80");
  }, 30_000);
});

describe("aetherctl against a seeded registrar", () => {
  it("lists the effective view and one origin, as tables and as JSON", async () => {
    const [effective, origin, json] = await Promise.all([
      ctl(seeded, "list"),
      ctl(seeded, "list", "--origin", "dev", "shop/checkout"),
      ctl(seeded, "-o", "json", "list"),
    ]);
    expect(effective.code).toBe(0);
    expect(effective.stdout.split("\n")[0]).toMatch(
      /^SERVICE +ORIGIN +VERSION +ROUTES +RULES +AGE +SIGNED$/,
    );
    expect(rows(effective.stdout).map((r) => [...r.slice(0, 5), r[6]])).toEqual([
      ["payments/ledger", "dev", VERSION, "1", "1", "-"],
      ["shop/checkout", "dev", VERSION, "1", "3", "-"],
    ]);
    expect(rows(origin.stdout).map((r) => r[0])).toEqual(["shop/checkout"]);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { projections: JsonObject[]; revision: string };
    expect(parsed.projections).toEqual([stamped(LEDGER, "dev"), stamped(CHECKOUT, "dev")]);
    expect(Number(parsed.revision)).toBeGreaterThan(0);
  });

  it("gets a projection as a tree and as proto JSON with its signature check", async () => {
    const [tree, json] = await Promise.all([
      ctl(seeded, "get", "shop/checkout"),
      ctl(seeded, "get", "shop/checkout", "-o", "json"),
    ]);
    expect(tree.code).toBe(0);
    expect(tree.stdout).toContain("origin:   dev\nsigned:   unsigned\n");
    expect(tree.stdout).toContain(
      [
        "HTTPRoute shop/checkout-canary (producer, created 2026-11-01T09:00:00Z)",
        "  parents: shop/checkout:8080",
        '  rule 0 "beta-testers"',
        '    match 0: path prefix /cart, header x-beta = "true"',
        "    backend: shop/checkout-v2:8080 weight 1 (100%)",
        '  rule 1 "moved"',
        "    match 0: path prefix /old",
        "    filter: redirect 301 scheme https, matched prefix → /new",
        "    backend: none (the redirect answers)",
        "  rule 2",
        "    match 0: path prefix /",
        "    filter: request headers: set x-routed-by: aether",
        "    backend: shop/checkout-v1:8080 weight 90 (90%)",
        "    backend: shop/checkout-v2:8080 weight 10 (10%)",
        "    timeouts: request 10s",
      ].join("\n"),
    );
    expect(json.code).toBe(0);
    // Proto JSON, and one more field: the signature's check.
    const { signatureCheck, ...proto } = JSON.parse(json.stdout) as JsonObject;
    expect(signatureCheck).toEqual({ keyId: null, algorithm: null, state: "unsigned" });
    const projection = fromJson(ServiceConfigProjectionSchema, proto);
    expect(projection).toEqual(fromJson(ServiceConfigProjectionSchema, stamped(CHECKOUT, "dev")));
  });

  it("explains a weighted split, a header match, a redirect and a service without config", async () => {
    const explain = (...args: string[]) =>
      ctl(seeded, "explain", "--from-namespace", "web", ...args);
    const [split, splitHigh, header, redirect, none] = await Promise.all([
      explain("GET", "http://checkout.shop:8080/cart?x=1"),
      explain("-o", "json", "--random", "0.95", "GET", "http://checkout.shop:8080/cart"),
      explain("-H", "x-beta: true", "GET", "http://checkout.shop.svc.cluster.local:8080/cart"),
      explain("GET", "http://checkout.shop:8080/old/page?q=1"),
      explain("GET", "http://nothing.shop/"),
    ]);
    for (const result of [split, splitHigh, header, redirect, none]) {
      expect(result).toMatchObject({ code: 0, stderr: "" });
    }
    expect(split.stdout).toContain(
      `decided by:  origin dev, version ${VERSION} (effective view)\n`,
    );
    expect(split.stdout).toContain("rule:        2\n");
    expect(split.stdout).toContain(
      "backend:     shop/checkout-v1:8080 (backend 0, weight 90, 90% of the rule's traffic)\n",
    );
    expect(split.stdout).toContain("headers:     set x-routed-by: aether\n");
    expect(split.stdout).toContain("timeouts:    request 10s\n");
    expect(JSON.parse(splitHigh.stdout)).toMatchObject({
      outcome: "forwarded",
      status: 200,
      route: { kind: "HTTPRoute", name: "checkout-canary", originCluster: "dev" },
      ruleIndex: 2,
      backend: { service: "shop/checkout-v2", port: 8080, weight: 10, index: 1 },
      requestHeaderChanges: [{ op: "set", name: "x-routed-by", value: "aether" }],
    });
    expect(header.stdout).toContain('rule:        0 "beta-testers"\n');
    expect(header.stdout).toContain('match:       0: path prefix /cart, header x-beta = "true"\n');
    expect(header.stdout).toContain("backend:     shop/checkout-v2:8080");
    expect(redirect.stdout).toContain("decision:    redirected, status 301\n");
    expect(redirect.stdout).toContain(
      "redirect:    301 Location: https://checkout.shop/new/page?q=1\n",
    );
    expect(none.stdout).toContain(
      "decided by:  no routing config for shop/nothing: requests go to the service itself\n",
    );
    expect(none.stdout).toContain("decision:    passthrough, status 200\n");
  });

  it("prints the status of a registrar with one origin and no export", async () => {
    const table = await ctl(seeded, "status", "--fail-on-rejections");
    expect(table.code).toBe(0);
    expect(table.stdout).toMatch(/^cluster: {10}dev\n/);
    expect(table.stdout).toContain("store:            memory\n");
    expect(table.stdout).toMatch(
      /\nORIGINS \(1\)\nORIGIN {2}PROJECTIONS {2}NEWEST .*\ndev {5}2 {12}.* {2}yes\n/,
    );
    expect(table.stdout).toContain("REJECTIONS: none\n");
    expect(table.stdout).toContain("EXPORT\n  enabled:  no");
  });

  it("fails clearly: registrar unreachable (1), unknown service (1), bad usage through the bin entry (2)", async () => {
    const dead = await deadUrl();
    const [unreachable, missing, usage] = await Promise.all([
      aetherctl(["--registrar", dead, "status"]),
      ctl(seeded, "get", "shop/nothing"),
      aetherctl(["lst"], BIN),
    ]);
    expect(unreachable).toEqual({
      code: 1,
      stdout: "",
      stderr: expect.stringMatching(
        new RegExp(
          `^aetherctl: unavailable: cannot reach the registrar at ${dead} \\(connect ECONNREFUSED`,
        ),
      ),
    });
    expect(missing).toEqual({
      code: 1,
      stdout: "",
      stderr: "aetherctl: not_found: no projection of shop/nothing in the effective view\n",
    });
    expect(usage.code).toBe(2);
    expect(usage.stderr).toMatch(/^aetherctl: unknown command "lst"[\s\S]*\n\nUsage: aetherctl /);
  });
});

describe("aetherctl against registrars over etcd", () => {
  /** Writes projections under `origin` in a fresh prefix's store. */
  async function put(prefix: string, origin: string, ...services: [string, number][]) {
    const store = createEtcdStore({ origin, endpoints: [etcd.endpoint], prefix });
    stores.push(store);
    for (const [service, n] of services) {
      await store.put(
        makeProjection(service, { version: versionAt(n), backend: `${service}-${origin}` }),
      );
    }
    return store;
  }

  function freshPrefix(): string {
    prefixCounter++;
    return `/ctl${process.pid}-${prefixCounter}/aether/v1`;
  }

  /** Starts a registrar over etcd at `prefix` and waits until it has synced (/readyz). */
  async function registrarOn(prefix: string, cluster: string, extra: string[] = []) {
    const registrar = await startRegistrarProcess([
      "--cluster",
      cluster,
      "--store",
      "etcd",
      "--etcd-endpoints",
      etcd.endpoint,
      "--etcd-prefix",
      prefix,
      ...extra,
    ]);
    await waitFor(
      async () => (await fetch(`${registrar.url}/readyz`)).status === 200,
      10_000,
      "the registrar to sync",
    );
    return registrar;
  }

  it("federated: lists every view, shows the conflict, and explains with the winning origin", async () => {
    const prefix = freshPrefix();
    await put(prefix, "hub", ["shop/checkout", 1], ["shop/cart", 1]);
    await put(prefix, "west", ["shop/checkout", 2]);
    const spoke = await registrarOn(prefix, "spoke");
    const [effective, all, status, explain] = await Promise.all([
      ctl(spoke, "list"),
      ctl(spoke, "list", "--all-origins"),
      ctl(spoke, "status"),
      ctl(spoke, "explain", "--from-namespace", "web", "GET", "http://checkout.shop/"),
    ]);
    expect(rows(effective.stdout).map((r) => [r[0], r[1]])).toEqual([
      ["shop/cart", "hub"],
      ["shop/checkout", "west"],
    ]);
    expect(
      rows(all.stdout)
        .map((r) => `${r[0]}@${r[1]}`)
        .sort(),
    ).toEqual(["shop/cart@hub", "shop/checkout@hub", "shop/checkout@west"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(
      "control cluster:  none (federated: every origin is trusted)\n",
    );
    expect(status.stdout).toContain(
      `CONFLICTS (1)\nSERVICE        WINNER  VERSION                         LOSERS\nshop/checkout  west    ${versionAt(2)}  hub\n`,
    );
    expect(status.stdout).toMatch(/\nhub {5}2 {12}\S+ \(\S+\) {2}\S+ \(\S+\) {2}yes\n/);
    expect(explain.stdout).toContain(
      `decided by:  origin west, version ${versionAt(2)} (effective view)\n`,
    );
    expect(explain.stdout).toContain("backend:     shop/checkout-west:80");
  });

  it("control cluster: shows the rejected origin (--fail-on-rejections exits 3), also as JSON", async () => {
    const prefix = freshPrefix();
    await put(prefix, "hub", ["shop/checkout", 1]);
    await put(prefix, "west", ["shop/checkout", 2]);
    const spoke = await registrarOn(prefix, "spoke", ["--control-cluster", "hub"]);
    const [status, json] = await Promise.all([
      ctl(spoke, "status", "--fail-on-rejections"),
      ctl(spoke, "-o", "json", "status"),
    ]);
    expect(status.code).toBe(3);
    expect(status.stderr).toMatch(/^aetherctl: 1 problem/);
    expect(json.code).toBe(0);
    expect(status.stdout).toContain("control cluster:  hub\n");
    expect(status.stdout).toMatch(/\nwest {4}1 {12}.* {2}no\n/);
    expect(status.stdout).toMatch(
      /REJECTIONS \(1\)\nSERVICE {8}ORIGIN {2}REASON {12}MESSAGE\nshop\/checkout {2}west {4}untrusted_origin {2}projection of shop\/checkout from origin "west" rejected/,
    );
    expect(status.stdout).toContain("CONFLICTS: none\n");
    expect(JSON.parse(json.stdout)).toMatchObject({
      controlCluster: "hub",
      rejections: [{ service: "shop/checkout", originCluster: "west", reason: "untrusted_origin" }],
    });
  });

  it("watches: prints the snapshot, then a change of a watched service only, and ends with exit 0 on SIGINT", async () => {
    const prefix = freshPrefix();
    const hub = await put(prefix, "hub", ["shop/checkout", 1], ["shop/other", 1]);
    const registrar = await registrarOn(prefix, "hub");
    const child = spawnAetherctl(["--registrar", registrar.url, "watch", "shop/checkout"]);
    const lines: string[] = [];
    const waiters: { match: RegExp; done: () => void }[] = [];
    createInterface({ input: child.stdout as NodeJS.ReadableStream }).on("line", (line) => {
      lines.push(line);
      for (const waiter of waiters.filter((w) => w.match.test(line))) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.done();
      }
    });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8");
    });
    const exited = once(child, "exit");
    const lineMatching = (match: RegExp) =>
      lines.some((line) => match.test(line))
        ? Promise.resolve()
        : new Promise<void>((done, fail) => {
            waiters.push({ match, done });
            void exited.then(() =>
              fail(new Error(`aetherctl exited; output:\n${lines.join("\n")}\n${stderr}`)),
            );
          });

    await lineMatching(/^SYNCED /);
    await hub.put(makeProjection("shop/other", { version: versionAt(5) }));
    await hub.put(makeProjection("shop/checkout", { version: versionAt(6) }));
    await lineMatching(/^UPSERT /);
    child.kill("SIGINT");
    const [code] = await exited;
    expect(code).toBe(0);
    expect(lines[0]).toMatch(/^TYPE {7}REVISION {2}SERVICE {19}ORIGIN {4}VERSION$/);
    expect(lines.slice(1).map((line) => line.split(/ +/))).toEqual([
      ["SNAPSHOT", expect.stringMatching(/^\d+$/), "shop/checkout", "hub", versionAt(1)],
      ["SYNCED", expect.stringMatching(/^\d+$/), "-", "-", "(snapshot", "complete)"],
      ["UPSERT", expect.stringMatching(/^\d+$/), "shop/checkout", "hub", versionAt(6)],
    ]);
    const upsertRevision = lines[3]?.split(/ +/)[1];
    expect(stderr).toBe(`aetherctl: watch stopped; resume with --resume ${upsertRevision}\n`);
  });
});
