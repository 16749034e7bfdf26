/**
 * The HTTP/2 limits of the registrar's port, on a real registrar over real
 * loopback sockets: the concurrent streams a connection may open (advertised
 * in SETTINGS, queued by well-behaved clients, refused when a peer ignores
 * them), header blocks that never finish, peers that stop answering PINGs,
 * and the cap on open WatchConfig streams.
 */
import { type ClientHttp2Session, constants } from "node:http2";
import { Code } from "@connectrpc/connect";
import { afterEach, describe, expect, it } from "vitest";
import { grpcCall, openSession } from "../support/grpc-h2.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
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
import { scrapeMetric } from "../support/scrape-metric.js";
import { waitFor } from "../support/wait.js";

/** How clients cancel a call (a NO_ERROR reset of an open request is not sent by Node 20). */
const { NGHTTP2_CANCEL } = constants;
const WATCH = "/aether.registry.v1.ConfigService/WatchConfig";
const REFUSED_STREAM = 0x7;

const registrars: TestRegistrar[] = [];
const sessions: ClientHttp2Session[] = [];
const raws: RawH2Connection[] = [];

afterEach(async () => {
  for (const session of sessions.splice(0)) session.destroy();
  for (const raw of raws.splice(0)) raw.destroy();
  await Promise.all(registrars.splice(0).map((r) => r.stop()));
});

async function registrar(...flags: string[]): Promise<TestRegistrar> {
  const r = await startTestRegistrar(["--cluster", "hub", ...flags]);
  registrars.push(r);
  return r;
}

async function session(url: string): Promise<ClientHttp2Session> {
  const s = await openSession(url);
  sessions.push(s);
  return s;
}

async function raw(port: number, options?: Parameters<typeof openRawH2>[1]) {
  const connection = await openRawH2(port, options);
  raws.push(connection);
  return connection;
}

function portOf(url: string): number {
  return Number(new URL(url).port);
}

const watchStreams = (url: string) => scrapeMetric(url, "aether_config_watch_streams");
const refusals = (url: string, reason: string) =>
  scrapeMetric(url, `aether_config_server_refusals_total{reason="${reason}"}`);

/** A WatchConfig request on stream `id` of a raw connection: HEADERS, then the message. */
function rawWatch(id: number): Buffer {
  return Buffer.concat([
    encodeFrame(FrameType.HEADERS, Flag.END_HEADERS, id, headerBlock(grpcRequestHeaders(WATCH))),
    encodeFrame(FrameType.DATA, Flag.END_STREAM, id, grpcEnvelope(new Uint8Array(0))),
  ]);
}

describe("concurrent streams per connection", () => {
  it("advertises the limit in SETTINGS, and a client queues the streams beyond it", async () => {
    const r = await registrar("--max-concurrent-streams", "5");
    const s = await session(r.url);
    expect(s.remoteSettings.maxConcurrentStreams).toBe(5);

    const calls = Array.from({ length: 8 }, () => grpcCall(s, WATCH));
    let answered = 0;
    for (const call of calls) void call.headers.then(() => answered++);
    await waitFor(async () => (await watchStreams(r.url)) === 5, 5_000, "five open watch streams");
    expect(answered).toBe(5);
    // The three beyond the limit wait in the client; none reached the server.
    expect(await watchStreams(r.url)).toBe(5);

    calls[0]?.stream.close(NGHTTP2_CANCEL);
    await waitFor(() => answered === 6, 5_000, "a queued stream to start");
    expect(await watchStreams(r.url)).toBe(5);
  });

  it("refuses the streams a peer opens beyond the limit anyway (REFUSED_STREAM)", async () => {
    const r = await registrar("--max-concurrent-streams", "3");
    // Opened before the server's SETTINGS could arrive, ignoring them.
    const c = await raw(portOf(r.url));
    c.write(Buffer.concat([1, 3, 5, 7, 9].map((id) => rawWatch(id))));
    const refused = await Promise.all(
      [7, 9].map((id) =>
        c.waitForFrame((f) => f.type === FrameType.RST_STREAM && f.streamId === id),
      ),
    );
    expect(refused.map((f) => f.payload.readUInt32BE(0))).toEqual([REFUSED_STREAM, REFUSED_STREAM]);
    await waitFor(async () => (await watchStreams(r.url)) === 3, 5_000, "three open streams");
    expect(c.frames.some((f) => f.type === FrameType.RST_STREAM && f.streamId <= 5)).toBe(false);
  });
});

/**
 * Resolves once the server's SETTINGS arrived (and were acknowledged), so no
 * frame of ours lands inside a header block we leave open.
 */
async function settled(c: RawH2Connection): Promise<RawH2Connection> {
  await c.waitForFrame((f) => f.type === FrameType.SETTINGS && (f.flags & Flag.ACK) === 0);
  return c;
}

describe("header blocks", () => {
  it("closes a connection whose header block never finishes, after the header timeout", async () => {
    const r = await registrar("--header-timeout", "300ms");
    const c = await settled(await raw(portOf(r.url)));
    const block = headerBlock(grpcRequestHeaders(WATCH));
    const started = Date.now();
    // HEADERS without END_HEADERS: a CONTINUATION must follow, and never does.
    c.write(encodeFrame(FrameType.HEADERS, 0, 1, block.subarray(0, 10)));
    await c.closedPromise;
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(await refusals(r.url, "header_timeout")).toBe(1);
  });

  it("keeps a connection whose header block finishes slowly but in time", async () => {
    const r = await registrar(
      ...["--header-timeout", "1s", "--ping-interval", "400ms", "--ping-timeout", "10s"],
    );
    const c = await settled(await raw(portOf(r.url)));
    const block = headerBlock(grpcRequestHeaders(WATCH));
    c.write(encodeFrame(FrameType.HEADERS, 0, 1, block.subarray(0, 10)));
    // Only a CONTINUATION may follow (not even a PING answer): it comes after
    // the server's first PING, 400 ms later, upkeep having looked at the open
    // block every 100 ms meanwhile.
    await c.waitForFrame((f) => f.type === FrameType.PING);
    c.write(
      Buffer.concat([
        encodeFrame(FrameType.CONTINUATION, Flag.END_HEADERS, 1, block.subarray(10)),
        encodeFrame(FrameType.DATA, Flag.END_STREAM, 1, grpcEnvelope(new Uint8Array(0))),
      ]),
    );
    await c.waitForFrame((f) => f.type === FrameType.HEADERS && f.streamId === 1);
    expect(c.closed).toBe(false);
    expect(await refusals(r.url, "header_timeout")).toBe(0);
  });
});

describe("server PINGs", () => {
  it("drops a peer that stops answering PINGs, and its watch streams end", async () => {
    const r = await registrar("--ping-interval", "200ms", "--ping-timeout", "300ms");
    const before = await watchStreams(r.url);
    const frozen = await raw(portOf(r.url));
    frozen.write(Buffer.concat([rawWatch(1), rawWatch(3)]));
    await waitFor(
      async () => (await watchStreams(r.url)) === (before ?? 0) + 2,
      5_000,
      "the frozen peer's two watch streams",
    );
    // It never answers the PING it gets, and stops reading.
    await frozen.waitForFrame((f) => f.type === FrameType.PING && (f.flags & Flag.ACK) === 0);
    frozen.socket.pause();
    await waitFor(
      async () => (await watchStreams(r.url)) === before,
      5_000,
      "the watch gauge back to its value before",
    );
    expect(await refusals(r.url, "ping_timeout")).toBe(1);
  });

  it("keeps a peer that answers them", async () => {
    const r = await registrar("--ping-interval", "100ms", "--ping-timeout", "300ms");
    const s = await session(r.url);
    let pings = 0;
    s.on("ping", () => pings++);
    const call = grpcCall(s, WATCH);
    await call.headers;
    await waitFor(async () => (await watchStreams(r.url)) === 1, 5_000, "the watch stream");
    // node:http2 answers every PING; several rounds later the stream is still open.
    await waitFor(() => pings >= 6, 5_000, "six PINGs");
    expect(await watchStreams(r.url)).toBe(1);
    expect(call.stream.closed).toBe(false);
    expect(await refusals(r.url, "ping_timeout")).toBe(0);
  });
});

describe("the WatchConfig stream limit", () => {
  it("refuses one more with RESOURCE_EXHAUSTED and retry advice, and admits again later", async () => {
    const r = await registrar("--max-watch-streams", "2");
    const s = await session(r.url);
    const first = grpcCall(s, WATCH);
    const second = grpcCall(s, WATCH);
    await Promise.all([first.headers, second.headers]);
    await waitFor(async () => (await watchStreams(r.url)) === 2, 5_000, "two open streams");

    const third = await grpcCall(s, WATCH).ended;
    expect(third.status).toBe(String(Code.ResourceExhausted));
    expect(third.message).toMatch(/at most 2 watch streams .*retry later/);
    expect(await refusals(r.url, "max_watch_streams")).toBe(1);

    first.stream.close(NGHTTP2_CANCEL);
    await waitFor(async () => (await watchStreams(r.url)) === 1, 5_000, "one stream closed");
    const fourth = grpcCall(s, WATCH);
    await fourth.headers;
    await waitFor(async () => (await watchStreams(r.url)) === 2, 5_000, "a new stream admitted");
  });
});

describe("a watch stream whose client does not read", () => {
  it("holds at most the backlog beyond what flow control lets out, then ends RESOURCE_EXHAUSTED", async () => {
    const r = await registrar("--max-watch-backlog", "5", "--ping-interval", "0");
    // A receive window of 1 KiB: the server may send no more until the client reads.
    const s = await openSession(r.url, { initialWindowSize: 1024 });
    sessions.push(s);
    const call = grpcCall(s, WATCH);
    await call.headers;
    call.stream.pause();
    let revision = 0;
    for (let i = 0; i < 50; i++) {
      revision = await r.registrar.store.put(makeProjection(`shop/svc-${i}`));
    }
    // Each change reached the stream's backlog as the cache saw it: past 5, it was dropped.
    await waitFor(() => r.registrar.cache.revision >= revision, 5_000, "the cache at the last put");
    expect(call.received()).toBeLessThanOrEqual(1024 + 64);
    call.stream.resume();
    const ended = await call.ended;
    expect(ended.status).toBe(String(Code.ResourceExhausted));
    expect(ended.message).toMatch(/fell more than 5 events behind; resume from the last revision/);
    await waitFor(async () => (await watchStreams(r.url)) === 0, 5_000, "the stream closed");
  });
});

describe("the streams open over all connections", () => {
  it("closes the connection that held the most while more streams than --max-open-streams are open, and keeps the others", async () => {
    const r = await registrar("--max-open-streams", "12");
    const openStreams = () => scrapeMetric(r.url, "aether_config_server_open_streams");
    // An agent-like connection with one watch stream, opened first.
    const agent = await session(r.url);
    const agentWatch = grpcCall(agent, WATCH);
    await agentWatch.headers;
    // A connection that opens eight streams and never reads a byte again.
    const greedy = await raw(portOf(r.url));
    greedy.write(Buffer.concat([1, 3, 5, 7, 9, 11, 13, 15].map((id) => rawWatch(id))));
    greedy.socket.pause();
    await waitFor(async () => (await openStreams()) === 9, 5_000, "nine open streams");
    // A third with three: 12 open, at the bound, nobody is closed.
    const modest = await raw(portOf(r.url));
    modest.write(Buffer.concat([1, 3, 5].map((id) => rawWatch(id))));
    await waitFor(async () => (await openStreams()) === 12, 5_000, "twelve open streams");
    expect(await refusals(r.url, "max_open_streams")).toBe(0);
    // One more, on the modest connection: at a tick of upkeep (every second at
    // most), the greedy one, which has held the most, is closed.
    modest.write(rawWatch(7));
    await waitFor(async () => (await openStreams()) === 5, 10_000, "five open streams left");
    expect(await refusals(r.url, "max_open_streams")).toBe(1);
    // The greedy peer learns it was cut off once it reads again.
    greedy.socket.resume();
    await greedy.closedPromise;
    expect(modest.closed).toBe(false);
    expect(agent.destroyed || agent.closed).toBe(false);
    expect(agentWatch.stream.closed).toBe(false);
  });
});
