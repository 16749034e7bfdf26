/**
 * Calls whose request never reaches its RPC (a body that does not decode)
 * are counted: `aether_config_rpc_undecoded_requests_total{method}`, over
 * Connect and gRPC, against an in-process registrar on a real socket.
 */
import { connect } from "node:http2";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { scrapeMetric } from "../support/scrape-metric.js";

let registrar: TestRegistrar;
beforeAll(async () => {
  registrar = await startTestRegistrar(["--cluster", "hub"]);
});
afterAll(async () => {
  await registrar?.stop();
});

/** Sends `body` to `path` over h2c with `headers`, and resolves with the HTTP status. */
function post(path: string, headers: Record<string, string>, body: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const session = connect(registrar.url);
    session.on("error", reject);
    const stream = session.request({ ":method": "POST", ":path": path, ...headers });
    let status = 0;
    stream.on("response", (h) => {
      status = Number(h[":status"]);
    });
    stream.on("data", () => {});
    stream.on("end", () => {
      session.close();
      resolve(status);
    });
    stream.on("error", reject);
    stream.end(body);
  });
}

const METHOD = "/aether.registry.v1.ConfigService/ListAllConfig";
const SAMPLE = 'aether_config_rpc_undecoded_requests_total{method="ListAllConfig"}';

describe("undecoded requests", () => {
  it("are counted per method, over Connect and gRPC", async () => {
    const before = (await scrapeMetric(registrar.url, SAMPLE)) ?? 0;
    const garbage = Buffer.from([0xff, 0xff, 0xff, 0xff, 0x0f, 0x01]);
    expect(await post(METHOD, { "content-type": "application/proto" }, garbage)).toBe(400);
    const frame = Buffer.concat([Buffer.from([0, 0, 0, 0, garbage.length]), garbage]);
    expect(await post(METHOD, { "content-type": "application/grpc", te: "trailers" }, frame)).toBe(
      200,
    );
    expect(await scrapeMetric(registrar.url, SAMPLE)).toBe(before + 2);
    // A well-formed call is not counted there.
    expect(await post(METHOD, { "content-type": "application/proto" }, Buffer.alloc(0))).toBe(200);
    expect(await scrapeMetric(registrar.url, SAMPLE)).toBe(before + 2);
  });
});
