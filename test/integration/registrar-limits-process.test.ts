/**
 * The findings of the black-box probe, replayed at CI size against a real
 * `aether-registrar` process under a lowered heap cap: thousands of
 * ListAllConfig streams whose bodies never finish, hundreds of WatchConfig
 * streams on connections that never read nor answer PINGs, and a client
 * process frozen with SIGSTOP. The registrar refuses what is beyond its
 * limits (counted, and logged once per reason), drops the dead peers, keeps
 * answering `/healthz` and serving its config, and never crashes.
 */
import { spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toJson } from "@bufbuild/protobuf";
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { ServiceConfigProjectionSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import { makeProjection } from "../support/projections.js";
import {
  encodeFrame,
  Flag,
  FrameType,
  grpcEnvelope,
  grpcRequestHeaders,
  headerBlock,
  openRawH2,
  type RawH2Connection,
} from "../support/raw-h2.js";
import {
  type RegistrarProcess,
  startRegistrarProcess,
  stopAllRegistrars,
} from "../support/registrar-process.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { waitFor } from "../support/wait.js";

const LIST_ALL = "/aether.registry.v1.ConfigService/ListAllConfig";
const WATCH = "/aether.registry.v1.ConfigService/WatchConfig";
/** The heap cap: the registrar idles at about 26 MB; the unbounded attacks below need 100 MB. */
const HEAP_CAP = ["--max-old-space-size=72"];

const raws: RawH2Connection[] = [];
const children: ReturnType<typeof spawn>[] = [];

afterEach(async () => {
  for (const raw of raws.splice(0)) raw.destroy();
  for (const child of children.splice(0)) child.kill("SIGKILL");
  await stopAllRegistrars();
});

/** A registrar process seeded with shop/cart, with `flags`. */
async function registrar(...flags: string[]): Promise<RegistrarProcess> {
  const dir = await mkdtemp(join(tmpdir(), "aether-limits-"));
  const seed = join(dir, "seed.json");
  const projection = toJson(ServiceConfigProjectionSchema, makeProjection("shop/cart"));
  await writeFile(seed, JSON.stringify({ projections: [projection] }));
  return startRegistrarProcess(["--cluster", "hub", "--seed", seed, ...flags], {
    nodeArgs: HEAP_CAP,
  });
}

/**
 * Opens `connections` raw HTTP/2 connections that each open `streams`
 * streams of `path` (within the advertised limit) with `body` and leave
 * them be: they never answer a PING, and never read again unless `reading`.
 */
async function flood(
  port: number,
  connections: number,
  streams: number,
  path: string,
  body: (id: number) => Buffer,
  reading = false,
): Promise<RawH2Connection[]> {
  // Every connection is open (its SETTINGS seen) before any stream is sent,
  // so all the streams arrive together, well before the first PING is due.
  const opened: RawH2Connection[] = [];
  for (let c = 0; c < connections; c++) {
    const raw = await openRawH2(port);
    raws.push(raw);
    await raw.waitForFrame((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) === 0);
    opened.push(raw);
  }
  const frames: Buffer[] = [];
  for (let i = 0; i < streams; i++) {
    const id = 1 + 2 * i;
    frames.push(
      encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, id, headerBlock(grpcRequestHeaders(path))),
      body(id),
    );
  }
  const burst = Buffer.concat(frames);
  for (const raw of opened) {
    raw.write(burst);
    if (!reading) raw.socket.pause();
  }
  return opened;
}

const metric = (r: RegistrarProcess, sample: string) => scrapeMetric(r.url, sample);
const refusals = (r: RegistrarProcess, reason: string) =>
  metric(r, `aether_config_server_refusals_total{reason="${reason}"}`);
const warnings = (r: RegistrarProcess, reason: string) =>
  r.logs.filter((line) => line.level === "warn" && line.reason === reason);

async function listedServices(r: RegistrarProcess): Promise<string[]> {
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: r.url, httpVersion: "1.1" }),
  );
  return (await client.listAllConfig({})).projections.map((p) => p.service);
}

describe("a registrar under a lowered heap cap", () => {
  it("survives 2000 ListAllConfig streams whose bodies never finish", async () => {
    const r = await registrar("--request-body-timeout", "2s");
    // 1000 of the 5000 bytes the message claims, and never END_STREAM.
    const partial = (id: number) =>
      encodeFrame(FrameType.DATA, 0, id, grpcEnvelope(new Uint8Array(1000), 5000));
    const attackers = await flood(Number(new URL(r.url).port), 20, 100, LIST_ALL, partial, true);

    await waitFor(
      async () => (await refusals(r, "max_pending_requests")) === 2000 - 256,
      15_000,
      "every body beyond the 256 unfinished allowed refused",
    );
    expect(await metric(r, "aether_config_server_pending_requests")).toBeLessThanOrEqual(256);
    expect((await fetch(`${r.url}/healthz`)).status).toBe(200);

    await waitFor(
      async () => (await refusals(r, "request_body_timeout")) === 256,
      15_000,
      "the 256 admitted ones answered DEADLINE_EXCEEDED",
    );
    expect(await metric(r, "aether_config_server_pending_requests")).toBe(0);
    // Every stream was answered and then reset: none is held for the attackers.
    const reset = (raw: RawH2Connection) =>
      new Set(raw.frames.filter((f) => f.type === FrameType.RST_STREAM).map((f) => f.streamId));
    await waitFor(
      () => attackers.every((raw) => reset(raw).size === 100),
      15_000,
      "every attacking stream reset",
    );
    expect(await listedServices(r)).toEqual(["shop/cart"]);
    // Logged, at most once per reason per 10 s.
    expect(warnings(r, "max_pending_requests").length).toBeGreaterThanOrEqual(1);
    expect(warnings(r, "max_pending_requests").length).toBeLessThanOrEqual(2);
    expect(r.logs.filter((line) => line.level === "error" || line.level === "fatal")).toEqual([]);
    // A session that is not read holds a graceful drain for its whole grace
    // period (Node waits for its GOAWAY to go out): the attackers leave first.
    for (const raw of attackers) raw.destroy();
    expect(await r.stop()).toBe(0);
  });

  it("refuses watch streams beyond the cap, and drops peers that stop answering PINGs", async () => {
    const r = await registrar(
      // The first PING is due 3 s after a session opens: the refusals are
      // all counted by then, even on a slow machine, and only then do the
      // silent peers start to miss PINGs.
      ...["--max-watch-streams", "300", "--ping-interval", "3s", "--ping-timeout", "1s"],
    );
    const port = Number(new URL(r.url).port);
    const watch = (id: number) =>
      encodeFrame(FrameType.DATA, Flag.END_STREAM, id, grpcEnvelope(new Uint8Array(0)));
    await flood(port, 5, 100, WATCH, watch);
    await waitFor(
      async () => (await refusals(r, "max_watch_streams")) === 200,
      15_000,
      "the 200 streams beyond the cap refused",
    );
    expect(await metric(r, "aether_config_watch_streams")).toBeLessThanOrEqual(300);
    expect((await fetch(`${r.url}/healthz`)).status).toBe(200);
    await waitFor(
      async () => (await metric(r, "aether_config_watch_streams")) === 0,
      15_000,
      "the silent peers dropped and their streams ended",
    );
    expect(await refusals(r, "ping_timeout")).toBe(5);
    expect(await listedServices(r)).toEqual(["shop/cart"]);
    expect(await r.stop()).toBe(0);
  });

  it("drops a client process frozen with SIGSTOP, and the watch gauge goes back", async () => {
    const r = await registrar("--ping-interval", "500ms", "--ping-timeout", "500ms");
    const child = spawn(
      process.execPath,
      [
        "-e",
        `const s = require("node:http2").connect(process.argv[1]);
         const call = s.request({ ":method": "POST", ":path": "${WATCH}",
           "content-type": "application/grpc", te: "trailers" });
         call.on("response", () => console.log("open"));
         call.on("data", () => {});
         call.end(Buffer.alloc(5));`,
        r.url,
      ],
      { stdio: ["ignore", "pipe", "inherit"] },
    );
    children.push(child);
    await new Promise<void>((resolve) => child.stdout?.once("data", () => resolve()));
    await waitFor(async () => (await metric(r, "aether_config_watch_streams")) === 1);

    child.kill("SIGSTOP");
    await waitFor(
      async () => (await metric(r, "aether_config_watch_streams")) === 0,
      10_000,
      "the frozen client dropped",
    );
    expect(await refusals(r, "ping_timeout")).toBe(1);
    expect(warnings(r, "ping_timeout")).toHaveLength(1);
    expect(await r.stop()).toBe(0);
  });
  it("answers probes and scrapes on its admin port while its main port is full", async () => {
    const r = await registrar("--max-connections", "40", "--admin-listen", "127.0.0.1:0");
    const serving = await r.waitForLog((line) => line.msg === "registrar serving");
    const admin = serving.adminUrl as string;
    expect(admin).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(admin).not.toBe(r.url);
    // 50 connections that never send a byte: the main port holds 40 and drops the rest.
    const port = Number(new URL(r.url).port);
    const idle: Socket[] = [];
    for (let i = 0; i < 50; i++) {
      const socket = connect({ host: "127.0.0.1", port });
      socket.on("error", () => undefined);
      idle.push(socket);
    }
    await waitFor(
      async () =>
        ((await scrapeMetric(
          admin,
          'aether_config_server_refusals_total{reason="max_connections"}',
        )) ?? 0) >= 10,
      10_000,
      "the connections beyond 40 refused",
    );
    // The main port has no room for a probe; the admin port answers.
    await expect(
      fetch(`${r.url}/healthz`, { signal: AbortSignal.timeout(2_000) }),
    ).rejects.toThrow();
    const healthz = await fetch(`${admin}/healthz`);
    expect([healthz.status, await healthz.text()]).toEqual([200, "ok\n"]);
    const readyz = await fetch(`${admin}/readyz`);
    expect([readyz.status, await readyz.text()]).toEqual([200, "ready\n"]);
    expect(await scrapeMetric(admin, "aether_config_server_connections")).toBe(40);
    // Only the operational routes, and only reads.
    const rpc = await fetch(`${admin}/aether.registry.v1.ConfigService/ListAllConfig`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(rpc.status).toBe(405);
    expect((await fetch(`${admin}/aether.registry.v1.ConfigService/ListAllConfig`)).status).toBe(
      404,
    );
    for (const socket of idle) socket.destroy();
    expect(await listedServices(r)).toEqual(["shop/cart"]);
    expect(await r.stop()).toBe(0);
  });
});
