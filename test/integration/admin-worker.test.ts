/**
 * The admin port served from a worker thread (admin-server.ts), over real
 * sockets: probes are answered while the main thread cannot run at all (a
 * synchronous loop blocks it; a second worker plays kubelet), `/healthz`
 * turns 503 once the main loop has not turned for the stall limit and back
 * to `ok` when it turns again; `/readyz` follows the main thread's
 * readiness and its draining; `/metrics` is the main thread's registry.
 */
import { createServer } from "node:net";
import { Worker } from "node:worker_threads";
import { Gauge, Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AdminServer,
  createAdminServer,
} from "../../services/registrar/server/admin-server.js";
import type { Readiness } from "../../services/registrar/server/create-http-server.js";
import { captureLogger } from "../support/capture-logger.js";
import { waitFor } from "../support/wait.js";

/** One probe of the prober worker: when it was answered (Date.now()) and what. */
interface Probe {
  readonly answeredAt: number;
  readonly status: number;
  readonly body: string;
}

/**
 * A prober in a worker thread of its own (plain JavaScript): GETs `url`
 * every 50 ms from "go" until "stop", then posts every answer.
 */
const PROBER = `
const { parentPort, workerData } = require("node:worker_threads");
const http = require("node:http");
const probes = [];
let stopped = false;
function probe() {
  if (stopped) return;
  http.get(workerData.url, { agent: false }, (res) => {
    let body = "";
    res.setEncoding("utf8");
    res.on("data", (chunk) => { body += chunk; });
    res.on("end", () => {
      probes.push({ answeredAt: Date.now(), status: res.statusCode, body });
      if (probes.length === 1) parentPort.postMessage({ kind: "probing" });
      setTimeout(probe, 50);
    });
  }).on("error", (error) => {
    probes.push({ answeredAt: Date.now(), status: 0, body: error.message });
    setTimeout(probe, 50);
  });
}
parentPort.on("message", (message) => {
  if (message === "go") probe();
  else { stopped = true; parentPort.postMessage({ kind: "probes", probes }); parentPort.close(); }
});
`;

/** Runs the main thread's own loop not at all for `ms` (the point of the test). */
function blockMainThread(ms: number): { from: number; to: number } {
  const from = Date.now();
  while (Date.now() - from < ms) {
    // A synchronous loop: no timer, I/O callback or message runs meanwhile.
  }
  return { from, to: Date.now() };
}

/** The stall limit of the tests' admin servers. */
const STALL_LIMIT_MS = 1_000;
/** How late the worker may notice a beat: its sampling interval (a probe notices sooner). */
const NOTICE_MS = 250;

let server: AdminServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

function adminServer(readiness: () => Readiness, drain = new AbortController()) {
  const registry = new Registry();
  new Gauge({ name: "admin_test_gauge", help: "a gauge of the test", registers: [registry] }).set(
    7,
  );
  const log = captureLogger();
  server = createAdminServer({
    readiness,
    metricsRegistry: registry,
    drainSignal: drain.signal,
    logger: log.logger,
    stallLimitMs: STALL_LIMIT_MS,
  });
  return { server, log, drain };
}

describe("the admin port's worker", () => {
  it("answers /healthz while the main thread is blocked: ok, then 503 past the stall limit, then ok again", async () => {
    const { server } = adminServer(() => ({ ready: true }));
    const { url } = await server.listen("127.0.0.1", 0);
    expect(await (await fetch(`${url}/healthz`)).text()).toBe("ok\n");

    const prober = new Worker(PROBER, { eval: true, workerData: { url: `${url}/healthz` } });
    const messages: { kind: string; probes?: Probe[] }[] = [];
    prober.on("message", (message) => messages.push(message));
    prober.postMessage("go");
    await waitFor(() => messages.some((m) => m.kind === "probing"), 10_000, "the first probe");

    const blocked = blockMainThread(2_500);

    // The loop turns again: /healthz recovers (asked from this thread now).
    await waitFor(
      async () => (await fetch(`${url}/healthz`)).status === 200,
      5_000,
      "/healthz to say ok again",
    );
    prober.postMessage("stop");
    await waitFor(() => messages.some((m) => m.kind === "probes"), 10_000, "the probes");
    const probes = messages.find((m) => m.kind === "probes")?.probes as Probe[];

    const during = probes.filter((p) => p.answeredAt > blocked.from && p.answeredAt < blocked.to);
    // Answered while this thread could not have answered anything.
    expect(during.length).toBeGreaterThan(5);
    expect(during.every((p) => p.status === 200 || p.status === 503)).toBe(true);
    // The last beat came at most a beat interval before the block, and was noticed at most
    // NOTICE_MS after it: ok for at least STALL_LIMIT_MS - 250 - NOTICE_MS into the block,
    // 503 from STALL_LIMIT_MS + NOTICE_MS into it on.
    const early = during.filter((p) => p.answeredAt < blocked.from + 300);
    const late = during.filter(
      (p) => p.answeredAt > blocked.from + STALL_LIMIT_MS + NOTICE_MS + 100,
    );
    expect(early.length).toBeGreaterThan(0);
    expect(early.every((p) => p.status === 200 && p.body === "ok\n")).toBe(true);
    expect(late.length).toBeGreaterThan(0);
    for (const probe of late) {
      expect(probe.status).toBe(503);
      expect(probe.body).toMatch(
        /^the main event loop has not turned for \d+\.\d s \(limit 1\.0 s\)\n$/,
      );
    }
  }, 30_000);

  it("serves /readyz from the main thread's readiness (draining included) and /metrics from its registry", async () => {
    let readiness: Readiness = { ready: false, reason: "not synced with the store yet" };
    const { server, drain } = adminServer(() => readiness);
    const { url } = await server.listen("127.0.0.1", 0);

    const readyz = await fetch(`${url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(await readyz.text()).toBe("not synced with the store yet\n");

    readiness = { ready: true, degraded: "holding 2 deletes of hub" };
    await waitFor(
      async () =>
        (await (await fetch(`${url}/readyz`)).text()) ===
        "ready, degraded: holding 2 deletes of hub\n",
      5_000,
      "/readyz to follow the readiness",
    );

    const metrics = await fetch(`${url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.headers.get("content-type")).toContain("text/plain");
    expect(await metrics.text()).toContain("admin_test_gauge 7");

    drain.abort();
    await waitFor(
      async () => (await (await fetch(`${url}/readyz`)).text()) === "draining\n",
      5_000,
      "/readyz to say draining",
    );
    expect((await fetch(`${url}/elsewhere`)).status).toBe(404);
    expect((await fetch(`${url}/healthz`, { method: "POST" })).status).toBe(405);
  });

  it("refuses a port in use with its error, and stops listening when closed", async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, "127.0.0.1", resolve));
    const port = (taken.address() as { port: number }).port;
    try {
      const { server: busy } = adminServer(() => ({ ready: true }));
      await expect(busy.listen("127.0.0.1", port)).rejects.toMatchObject({ code: "EADDRINUSE" });
      await busy.close();
    } finally {
      taken.close();
    }

    const { server: open } = adminServer(() => ({ ready: true }));
    const { url } = await open.listen("127.0.0.1", 0);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    await open.close();
    expect(open.address).toBeUndefined();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
  });
});
