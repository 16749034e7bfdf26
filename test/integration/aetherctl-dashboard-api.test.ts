/**
 * `aetherctl dashboard`'s ConfigService gateway (issue 17, server side),
 * in process over real loopback sockets: a registrar serving mutual TLS
 * with certificates this test makes, the dashboard reaching it with the
 * operator's SVID and the registrar's SPIFFE ID checked, and the generated
 * Connect client (HTTP/1.1, JSON and binary, and gRPC-Web) pointed at the
 * dashboard with no credentials at all. It lists, follows WatchConfig (an
 * edit arrives; the client's abort closes the registrar's stream), answers
 * GetFleetStatus and GetConfigStatus, passes the registrar's errors through
 * with their code and message and none of the browser's headers to the
 * registrar, refuses ReportAppliedConfig, and ends the browser's stream
 * when the registrar ends its own; without the console's assets, / says
 * they are not built.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPORT_REFUSED } from "../../clients/aetherctl/dashboard/config-gateway.js";
import { createDashboardServer } from "../../clients/aetherctl/dashboard/dashboard-server.js";
import { ConfigService, WatchEventType } from "../../gen/aether/registry/v1/config_service_pb.js";
import { connectErrorOf } from "../support/connect-error-of.js";
import { plainRequest, type RunningDashboard, startDashboard } from "../support/dashboard-run.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { clientTlsOptions, connectClient, registrarTlsFlags } from "../support/mtls-clients.js";
import { makeProjection } from "../support/projections.js";
import { createSpiffePki, REGISTRAR_ID, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";
import { recordWatch } from "../support/watch-recorder.js";

let dir: string;
let pki: SpiffePki;
let registrar: TestRegistrar;
let dashboard: RunningDashboard;
const opened: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-dashboard-api-"));
  pki = await createSpiffePki(dir);
  registrar = await startTestRegistrar(["--cluster", "hub", ...registrarTlsFlags(pki)]);
  await registrar.registrar.store.put(makeProjection("shop/cart"));
  dashboard = await startDashboard(
    [
      ...["--registrar", registrar.url, "--timeout", "5s", "--open"],
      ...["--tls-cert-file", pki.client.cert, "--tls-key-file", pki.client.key],
      ...["--trust-domain-bundle", `hub.mesh=${pki.bundles.hubJwks}`],
      ...["--trust-domain-bundle", `east.mesh=${pki.bundles.eastPem}`],
      ...["--registrar-spiffe-id", REGISTRAR_ID],
      ...["--assets", join(dir, "no-console")],
    ],
    { openBrowser: async (url) => void opened.push(url) },
  );
}, 60_000);

afterAll(async () => {
  await dashboard?.stop();
  await registrar?.stop();
  await rm(dir, { recursive: true, force: true });
});

/** The generated client pointed at the dashboard: plain HTTP/1.1, no certificate. */
function viaDashboard(options: { binary?: boolean; grpcWeb?: boolean } = {}) {
  const settings = { baseUrl: dashboard.url, httpVersion: "1.1" as const };
  const transport = options.grpcWeb
    ? createGrpcWebTransport(settings)
    : createConnectTransport({ ...settings, useBinaryFormat: options.binary ?? false });
  return createClient(ConfigService, transport);
}

/** The registrar's open WatchConfig streams (its aether_config_watch_streams gauge). */
async function openWatchStreams(): Promise<number> {
  const gauge = registrar.registrar.metrics.registry.getSingleMetric("aether_config_watch_streams");
  return (await gauge?.get())?.values[0]?.value ?? Number.NaN;
}

describe("aetherctl dashboard: the ConfigService gateway over mutual TLS", () => {
  it("prints its URL on one line, says the registrar answers, and opens the URL with --open", () => {
    const { stdout, stderr } = dashboard.output();
    expect(stdout).toBe(`aetherctl dashboard: serving ${dashboard.url} (Ctrl-C stops)\n`);
    expect(dashboard.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/$/);
    expect(stderr).toContain(`registrar ${registrar.url} answers (cluster hub)`);
    expect(opened).toEqual([dashboard.url]);
  });

  it("lists config with Connect JSON, Connect binary and gRPC-Web", async () => {
    for (const options of [{}, { binary: true }, { grpcWeb: true }]) {
      const all = await viaDashboard(options).listAllConfig({});
      expect(all.projections.map((p) => p.service)).toContain("shop/cart");
      const one = await viaDashboard(options).listConfig({ originCluster: "hub" });
      expect(one.projections.map((p) => p.service)).toContain("shop/cart");
    }
  });

  it("answers GetConfigStatus and GetFleetStatus from the registrar", async () => {
    const status = await viaDashboard().getConfigStatus({});
    expect(status.cluster).toBe("hub");
    const fleet = await viaDashboard().getFleetStatus({});
    const direct = await connectClient(registrar.url, pki, pki.client, "1.1").getFleetStatus({});
    // The same answer but for the time it was made.
    expect({ ...fleet, time: undefined }).toEqual({ ...direct, time: undefined });
    expect(fleet.clusters.length).toBeGreaterThan(0);
  });

  it("passes the registrar's error through with its code and message", async () => {
    const direct = connectClient(registrar.url, pki, pki.client, "1.1");
    const request = { services: ["not a service"] };
    const want = await connectErrorOf(() => direct.listAllConfig(request));
    const got = await connectErrorOf(() => viaDashboard().listAllConfig(request));
    expect(want.code).toBe(Code.InvalidArgument);
    expect(got.code).toBe(want.code);
    expect(got.rawMessage).toBe(want.rawMessage);
  });

  it("ends a WatchConfig stream with the registrar's error code", async () => {
    const stream = viaDashboard().watchConfig({ services: ["Not/Valid!"] });
    const error = await connectErrorOf(async () => {
      for await (const _ of stream) {
        // no event is expected
      }
    });
    expect(error.code).toBe(Code.InvalidArgument);
  });

  it("follows WatchConfig: an edit arrives; the client's abort closes the registrar's stream", async () => {
    expect(await openWatchStreams()).toBe(0);
    const abort = new AbortController();
    const seen: string[] = [];
    const stream = viaDashboard({ binary: true }).watchConfig(
      { services: ["shop/cart", "shop/pay"] },
      { signal: abort.signal },
    );
    const done = (async () => {
      for await (const event of stream) {
        seen.push(`${WatchEventType[event.type]} ${event.projection?.service ?? ""}`.trim());
        if (event.type === WatchEventType.SYNCED) {
          await registrar.registrar.store.put(makeProjection("shop/pay"));
        }
        if (event.type === WatchEventType.UPSERT) abort.abort();
      }
    })().catch((error: unknown) => ConnectError.from(error));
    await waitFor(() => seen.includes("UPSERT shop/pay"), 10_000, "the edit through the dashboard");
    expect(seen.slice(0, 3)).toEqual(["SNAPSHOT shop/cart", "SYNCED", "UPSERT shop/pay"]);
    expect(((await done) as ConnectError).code).toBe(Code.Canceled);
    await waitFor(
      async () => (await openWatchStreams()) === 0,
      10_000,
      "the upstream stream closed",
    );
  });

  it("keeps the upstream stream open exactly while the browser's is", async () => {
    const abort = new AbortController();
    const stream = viaDashboard().watchConfig({}, { signal: abort.signal });
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    await waitFor(async () => (await openWatchStreams()) === 1, 10_000, "one upstream stream");
    abort.abort();
    await iterator.next().catch(() => undefined);
    await waitFor(async () => (await openWatchStreams()) === 0, 10_000, "no upstream stream");
  });

  it("says at / that the console's assets are not built, naming the directory, and still forwards", async () => {
    const page = await plainRequest(dashboard.url, "/");
    expect(page.status).toBe(200);
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.body).toContain("The console's assets are not built");
    expect(page.body).toContain(join(dir, "no-console"));
    expect((await plainRequest(dashboard.url, "/index.js")).status).toBe(404);
    expect((await viaDashboard().getConfigStatus({})).cluster).toBe("hub");
  });

  it("sends the registrar the message and none of the browser's headers", async () => {
    const upstream: Headers[] = [];
    const recording = createConnectTransport({
      baseUrl: registrar.url,
      httpVersion: "1.1",
      nodeOptions: clientTlsOptions(pki, pki.client),
      interceptors: [
        (next) => (request) => {
          upstream.push(new Headers(request.header));
          return next(request);
        },
      ],
    });
    const server = createDashboardServer({
      client: createClient(ConfigService, recording),
      timeoutMs: 5_000,
      assetsDir: dir,
      host: "127.0.0.1",
      port: 0,
    });
    const url = await server.start();
    try {
      const browser = {
        authorization: "Bearer from-the-browser",
        cookie: "session=1",
        "x-forwarded-for": "203.0.113.9",
        "x-aether-test": "1",
      };
      const response = await plainRequest(url, "/aether.registry.v1.ConfigService/ListAllConfig", {
        method: "POST",
        headers: {
          "content-type": "application/json",
          "connect-protocol-version": "1",
          ...browser,
        },
        body: JSON.stringify({ services: ["shop/cart"] }),
      });
      expect(response.status).toBe(200);
      expect(JSON.parse(response.body).projections[0].service).toBe("shop/cart");
      expect(upstream).toHaveLength(1);
      for (const name of Object.keys(browser)) expect(upstream[0]?.has(name), name).toBe(false);
    } finally {
      await server.close();
    }
  });

  it("refuses ReportAppliedConfig: a browser is not an agent", async () => {
    const error = await connectErrorOf(() => viaDashboard().reportAppliedConfig({ agentId: "x" }));
    expect(error.rawMessage).toBe(REPORT_REFUSED);
    expect(error.code).toBe(Code.PermissionDenied);
  });

  it("ends the browser's WatchConfig when the registrar ends its stream (it stops)", async () => {
    const watch = recordWatch(viaDashboard(), {});
    await watch.until(
      (events) => events.some((e) => e.type === WatchEventType.SYNCED),
      10_000,
      "SYNCED through the dashboard",
    );
    await registrar.stop();
    expect(await watch.ended).toBeUndefined();
  });
});
