/**
 * The budget of unfinished request bodies, on a real registrar over real
 * loopback sockets: a body that never finishes is answered DEADLINE_EXCEEDED
 * and released (gRPC over HTTP/2, Connect over HTTP/1.1); requests beyond
 * the count of unfinished bodies, or whose bytes would go beyond their
 * budget, are refused at once with RESOURCE_EXHAUSTED and retry advice in
 * every protocol (as hand-made calls, connect-es and grpc-js read them); and
 * the registrar keeps serving its config throughout.
 */
import { type ClientHttp2Session, constants } from "node:http2";
import { connect, type Socket } from "node:net";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import {
  createConnectTransport,
  createGrpcTransport,
  createGrpcWebTransport,
  Http2SessionManager,
} from "@connectrpc/connect-node";
import * as grpc from "@grpc/grpc-js";
import { afterEach, describe, expect, it, onTestFinished } from "vitest";
import { ConfigService, WatchEventType } from "../../gen/aether/registry/v1/config_service_pb.js";
import { grpcCall, openSession } from "../support/grpc-h2.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection } from "../support/projections.js";
import { grpcEnvelope } from "../support/raw-h2.js";
import { scrapeMetric } from "../support/scrape-metric.js";
import { sendRawBytes } from "../support/test-http-server.js";
import { waitFor } from "../support/wait.js";

/** How clients cancel a call (a NO_ERROR reset of an open request is not sent by Node 20). */
const { NGHTTP2_CANCEL } = constants;
const LIST_ALL = "/aether.registry.v1.ConfigService/ListAllConfig";

const registrars: TestRegistrar[] = [];
const sessions: ClientHttp2Session[] = [];

afterEach(async () => {
  for (const session of sessions.splice(0)) session.destroy();
  await Promise.all(registrars.splice(0).map((r) => r.stop()));
});

/** A registrar serving one projection, with `flags`. */
async function registrar(...flags: string[]): Promise<TestRegistrar> {
  const r = await startTestRegistrar(["--cluster", "hub", ...flags]);
  registrars.push(r);
  await r.registrar.store.put(makeProjection("shop/cart"));
  await waitFor(async () => (await r.client.listAllConfig({})).projections.length === 1);
  return r;
}

async function session(url: string): Promise<ClientHttp2Session> {
  const s = await openSession(url);
  sessions.push(s);
  return s;
}

/** A request message's first `sent` bytes, its envelope declaring `declared`. */
function partialMessage(declared: number, sent: number): Buffer {
  return grpcEnvelope(new Uint8Array(sent), declared);
}

const pending = (url: string) => scrapeMetric(url, "aether_config_server_pending_requests");
const refusals = (url: string, reason: string) =>
  scrapeMetric(url, `aether_config_server_refusals_total{reason="${reason}"}`);

describe("the request-body deadline", () => {
  it("answers a gRPC call whose body never finishes with DEADLINE_EXCEEDED and closes it", async () => {
    const r = await registrar("--request-body-timeout", "300ms");
    const s = await session(r.url);
    const started = Date.now();
    const call = grpcCall(s, LIST_ALL, { body: partialMessage(100, 10), end: false });
    const ended = await call.ended;
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(ended.status).toBe(String(Code.DeadlineExceeded));
    expect(ended.message).toMatch(/did not arrive within 300 ms/);
    expect(await pending(r.url)).toBe(0);
    expect(await refusals(r.url, "request_body_timeout")).toBe(1);
    // The session and the config are fine.
    const next = await grpcCall(s, LIST_ALL).ended;
    expect(next.status).toBe("0");
  });

  it("answers a Connect call over HTTP/1.1 whose body never finishes, then closes the connection", async () => {
    const r = await registrar("--request-body-timeout", "300ms", "--header-timeout", "300ms");
    const reply = await sendRawBytes(
      Number(new URL(r.url).port),
      `POST ${LIST_ALL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n` +
        'Content-Length: 100\r\n\r\n{"vi',
      { end: false, timeoutMs: 5_000 },
    );
    const text = reply.toString("utf8");
    expect(text).toMatch(/^HTTP\/1\.1 504 /);
    expect(text).toContain('"code":"deadline_exceeded"');
    expect(await pending(r.url)).toBe(0);
    expect((await r.client.listAllConfig({})).projections).toHaveLength(1);
  });
});

describe("the count of unfinished request bodies", () => {
  it("refuses one more at once in every protocol, and admits again once they are gone", async () => {
    const r = await registrar("--max-pending-requests", "3", "--request-body-timeout", "30s");
    const s = await session(r.url);
    const held = [1, 2, 3].map(() =>
      grpcCall(s, LIST_ALL, { body: partialMessage(100, 10), end: false }),
    );
    await waitFor(async () => (await pending(r.url)) === 3, 5_000, "three unfinished bodies");

    const refused = await grpcCall(s, LIST_ALL).ended;
    expect(refused.status).toBe(String(Code.ResourceExhausted));
    expect(refused.message).toMatch(/retry later/);
    expect(refused.trailers["grpc-retry-pushback-ms"]).toBe("1000");

    const connect = await fetch(`${r.url}${LIST_ALL}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(connect.status).toBe(429);
    expect(connect.headers.get("retry-after")).toBe("1");
    expect(await connect.json()).toMatchObject({ code: "resource_exhausted" });

    const grpcJs = new grpc.Client(
      `127.0.0.1:${new URL(r.url).port}`,
      grpc.credentials.createInsecure(),
    );
    const grpcJsError = await new Promise<grpc.ServiceError | null>((resolve) =>
      grpcJs.makeUnaryRequest(
        LIST_ALL,
        (request: Buffer) => request,
        (response: Buffer) => response,
        Buffer.alloc(0),
        (error) => resolve(error),
      ),
    );
    grpcJs.close();
    expect(grpcJsError?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
    expect(grpcJsError?.details).toMatch(/retry later/);

    // gRPC-Web (a trailer frame) and Connect streaming (an end-stream message).
    const web = createClient(
      ConfigService,
      createGrpcWebTransport({ baseUrl: r.url, httpVersion: "1.1" }),
    );
    const connectStreaming = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: r.url, httpVersion: "1.1" }),
    );
    const codes = await Promise.all([
      web.listAllConfig({}).then(
        () => "ok",
        (e: unknown) => Code[ConnectError.from(e).code],
      ),
      (async () => {
        for await (const _ of connectStreaming.watchConfig({})) return "ok";
        return "ended";
      })().catch((e: unknown) => Code[ConnectError.from(e).code]),
    ]);
    expect(codes).toEqual(["ResourceExhausted", "ResourceExhausted"]);

    // Requests without a body are not counted.
    expect((await fetch(`${r.url}/healthz`)).status).toBe(200);
    expect(await refusals(r.url, "max_pending_requests")).toBe(5);

    for (const call of held) call.stream.close(NGHTTP2_CANCEL);
    await waitFor(async () => (await pending(r.url)) === 0, 5_000, "the bodies released");
    expect((await r.client.listAllConfig({})).projections).toHaveLength(1);
  });
});

describe("the count of calls being answered", () => {
  it("refuses one more unary call at once, leaves watch streams and plain routes alone, and admits again", async () => {
    const r = await registrar("--max-concurrent-calls", "3", "--request-body-timeout", "30s");
    const inFlight = () => scrapeMetric(r.url, "aether_config_server_calls_in_flight");
    // Three calls held open, one per connection: their bodies never finish, so their answers
    // never close, and each connection holds its fair share.
    const sessions = [await session(r.url), await session(r.url), await session(r.url)];
    const s = sessions[0] as ClientHttp2Session;
    const held = sessions.map((each) =>
      grpcCall(each, LIST_ALL, { body: partialMessage(100, 10), end: false }),
    );
    await waitFor(async () => (await inFlight()) === 3, 5_000, "three calls in flight");

    const refused = await grpcCall(s, LIST_ALL).ended;
    expect(refused.status).toBe(String(Code.ResourceExhausted));
    expect(refused.message).toMatch(/answering 3 calls, its most; retry later/);
    expect(refused.trailers["grpc-retry-pushback-ms"]).toBe("1000");
    const connect = await fetch(`${r.url}${LIST_ALL}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect([connect.status, connect.headers.get("retry-after")]).toEqual([429, "1"]);
    expect(await refusals(r.url, "max_concurrent_calls")).toBe(2);

    // A watch stream is not a unary call: it opens and syncs.
    const watching = new AbortController();
    let synced = false;
    for await (const event of r.client.watchConfig({}, { signal: watching.signal })) {
      if (event.type === WatchEventType.SYNCED) {
        synced = true;
        break;
      }
    }
    watching.abort();
    expect(synced).toBe(true);
    expect((await fetch(`${r.url}/healthz`)).status).toBe(200);

    for (const call of held) call.stream.close(NGHTTP2_CANCEL);
    await waitFor(async () => (await inFlight()) === 0, 5_000, "the calls released");
    expect((await r.client.listAllConfig({})).projections).toHaveLength(1);
    expect(await refusals(r.url, "max_concurrent_calls")).toBe(2);
  });
});

/**
 * Cancels every held call, also when the test failed: Node 20's client
 * session spins in destroy() (and runs out of memory) when one of its streams
 * was reset by the server while the others still send.
 */
function closeAll(calls: readonly { stream: { close(code: number): void } }[]): void {
  for (const call of calls) call.stream.close(NGHTTP2_CANCEL);
}

describe("HTTP/1.1 refusals", () => {
  /** A raw HTTP/1.1 connection: what it received so far, and whether the server closed it. */
  async function rawHttp1(url: string) {
    const socket: Socket = connect(Number(new URL(url).port), "127.0.0.1");
    await new Promise((resolve) => socket.once("connect", resolve));
    onTestFinished(() => {
      socket.destroy();
    });
    const state = { text: "", closed: false };
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      state.text += chunk;
    });
    socket.on("error", () => undefined);
    socket.on("close", () => {
      state.closed = true;
    });
    return { socket, state };
  }
  const responses = (text: string) => text.match(/HTTP\/1\.1 \d{3}/g) ?? [];

  it("let a small body arrive after the refusal and keep the connection; a large one closes it", async () => {
    const r = await registrar("--max-concurrent-calls", "1", "--request-body-timeout", "30s");
    const held = [
      grpcCall(await session(r.url), LIST_ALL, { body: partialMessage(100, 10), end: false }),
    ];
    onTestFinished(() => closeAll(held));
    await waitFor(
      async () => (await scrapeMetric(r.url, "aether_config_server_calls_in_flight")) === 1,
      5_000,
      "one call in flight",
    );

    // The headers first; the refusal comes before the body is sent.
    const small = await rawHttp1(r.url);
    small.socket.write(
      `POST ${LIST_ALL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n`,
    );
    await waitFor(
      () => small.state.text.includes('"code":"resource_exhausted"'),
      5_000,
      "the refusal",
    );
    expect(small.state.text).toMatch(/^HTTP\/1\.1 429 /);
    expect(small.state.text.toLowerCase()).not.toContain("connection: close");
    // The client goes on sending its body, then another request on the same connection.
    small.socket.write("{}");
    small.socket.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    await waitFor(() => responses(small.state.text).length === 2, 5_000, "the second answer");
    expect(responses(small.state.text)).toEqual(["HTTP/1.1 429", "HTTP/1.1 200"]);
    expect(small.state.closed).toBe(false);

    // A body too large to let arrive: the refusal closes the connection.
    const large = await rawHttp1(r.url);
    large.socket.write(
      `POST ${LIST_ALL} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${1024 * 1024}\r\n\r\n`,
    );
    await waitFor(() => large.state.closed, 5_000, "the connection closed");
    expect(large.state.text).toMatch(/^HTTP\/1\.1 429 /);
    expect(large.state.text.toLowerCase()).toContain("connection: close");
  });
});

describe("a full limit shared fairly between connections", () => {
  it("cuts off the oldest call of the connection answering the most for a lighter connection's call", async () => {
    const r = await registrar("--max-concurrent-calls", "3", "--request-body-timeout", "30s");
    const inFlight = () => scrapeMetric(r.url, "aether_config_server_calls_in_flight");
    const greedy = await session(r.url);
    const held = [1, 2, 3].map(() =>
      grpcCall(greedy, LIST_ALL, { body: partialMessage(100, 10), end: false }),
    );
    onTestFinished(() => closeAll(held));
    await waitFor(async () => (await inFlight()) === 3, 5_000, "three calls in flight");

    // Connect over HTTP/1.1 from another connection: answered with the listing.
    const connect = await fetch(`${r.url}${LIST_ALL}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    expect(connect.status).toBe(200);
    expect(await connect.json()).toMatchObject({ projections: [{ service: "shop/cart" }] });
    // The greedy connection's oldest call was reset as if cancelled; the others are still open.
    const oldest = await (held[0] as (typeof held)[number]).ended;
    expect(oldest.rstCode).toBe(NGHTTP2_CANCEL);
    expect(await refusals(r.url, "preempted_call")).toBe(1);
    expect(await refusals(r.url, "max_concurrent_calls")).toBe(0);
    expect(held.slice(1).every((call) => !call.stream.closed)).toBe(true);
    await waitFor(async () => (await inFlight()) === 2, 5_000, "two calls in flight");

    for (const call of held) call.stream.close(NGHTTP2_CANCEL);
    await waitFor(async () => (await inFlight()) === 0, 5_000, "the calls released");
  });
});

describe("the bytes of unfinished request bodies", () => {
  it("refuses a body whose bytes would go beyond the budget", async () => {
    const r = await registrar(
      ...["--max-request-bytes", "64KiB", "--max-pending-request-bytes", "128KiB"],
      ...["--request-body-timeout", "30s"],
    );
    const s = await session(r.url);
    const held = [1, 2].map(() =>
      grpcCall(s, LIST_ALL, { body: partialMessage(65_000, 60_000), end: false }),
    );
    await waitFor(
      async () =>
        (await scrapeMetric(r.url, "aether_config_server_pending_request_bytes")) === 120_010,
      5_000,
      "two bodies of 60000 bytes (and their envelopes) held",
    );
    const third = await grpcCall(s, LIST_ALL, {
      body: partialMessage(65_000, 60_000),
      end: false,
    }).ended;
    expect(third.status).toBe(String(Code.ResourceExhausted));
    expect(third.message).toMatch(/memory .* retry later/);
    // A generated client sending a whole request that does not fit reads the same.
    const manager = new Http2SessionManager(r.url);
    const client = createClient(
      ConfigService,
      createGrpcTransport({ baseUrl: r.url, sessionManager: manager }),
    );
    const services = Array.from({ length: 600 }, (_, i) => `shop/${"s".repeat(90)}${i}`);
    const error = await client.listAllConfig({ services }).then(
      () => undefined,
      (e: unknown) => ConnectError.from(e),
    );
    manager.abort();
    expect(error?.code).toBe(Code.ResourceExhausted);
    expect(error?.rawMessage).toMatch(/retry later/);
    expect(await refusals(r.url, "max_pending_request_bytes")).toBe(2);

    for (const call of held) call.stream.close(NGHTTP2_CANCEL);
    await waitFor(async () => (await pending(r.url)) === 0, 5_000, "the bodies released");
    expect(await scrapeMetric(r.url, "aether_config_server_pending_request_bytes")).toBe(0);
    expect((await r.client.listAllConfig({})).projections).toHaveLength(1);
  });
});
