/**
 * The WatchConfig lane (`watch-lane.ts`) on a real registrar over real
 * HTTP/2: a plain gRPC request is served by the lane, one that names a
 * request compression by connect-es, and both get the same bytes, the same
 * changes and the same status; a Connect client's deadline ends its lane
 * stream with DEADLINE_EXCEEDED.
 */
import { fromBinary } from "@bufbuild/protobuf";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterEach, describe, expect, it } from "vitest";
import {
  ConfigService,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { type GrpcCall, grpcCall, openSession } from "../support/grpc-h2.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const WATCH = "/aether.registry.v1.ConfigService/WatchConfig";
const started: TestRegistrar[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((r) => r.stop()));
});

/** The response bytes of a call as they arrive, and the event types of its whole frames. */
function bytesOf(call: GrpcCall): { all: () => Buffer; types: () => string[] } {
  const chunks: Buffer[] = [];
  call.stream.on("data", (chunk: Buffer) => chunks.push(chunk));
  const all = () => Buffer.concat(chunks);
  return {
    all,
    types() {
      const bytes = all();
      const types: string[] = [];
      for (let at = 0; at + 5 <= bytes.length; ) {
        const end = at + 5 + bytes.readUInt32BE(at + 1);
        if (end > bytes.length) break;
        const event = fromBinary(WatchConfigResponseSchema, bytes.subarray(at + 5, end));
        types.push(WatchEventType[event.type]);
        at = end;
      }
      return types;
    },
  };
}

describe("the WatchConfig lane", () => {
  it("sends the bytes, changes and status connect-es sends for the same stream", async () => {
    const r = await startTestRegistrar(["--cluster", "hub"]);
    started.push(r);
    await r.registrar.store.put(makeProjection("shop/a"));
    const last = await r.registrar.store.put(makeProjection("shop/b"));
    await waitFor(() => r.registrar.cache.revision >= last, 5_000, "the cache at the puts");
    const session = await openSession(r.url);
    const lane = grpcCall(session, WATCH);
    // Naming a request compression (the message itself is not compressed) leaves it to connect-es.
    const connectEs = grpcCall(session, WATCH, { headers: { "grpc-encoding": "gzip" } });
    const [laneHeaders, connectEsHeaders] = await Promise.all([lane.headers, connectEs.headers]);
    // Two paths indeed: connect-es names the codec in its content type and echoes the
    // compression; the lane answers with the request's content type and no compression.
    expect(connectEsHeaders["content-type"]).toBe("application/grpc+proto");
    expect(connectEsHeaders["grpc-encoding"]).toBe("gzip");
    expect(laneHeaders["content-type"]).toBe("application/grpc");
    expect(laneHeaders["grpc-encoding"]).toBeUndefined();
    const [laneBytes, connectEsBytes] = [bytesOf(lane), bytesOf(connectEs)];
    const both = (types: string[]) =>
      [laneBytes, connectEsBytes].every((b) => b.types().join() === types.join());
    const initial = ["SNAPSHOT", "SNAPSHOT", "SYNCED"];
    await waitFor(() => both(initial), 5_000, "the initial sync on both");
    expect(laneBytes.all().equals(connectEsBytes.all())).toBe(true);
    const next = await r.registrar.store.put(makeProjection("shop/c"));
    await waitFor(() => both([...initial, "UPSERT"]), 5_000, `the change at ${next} on both`);
    expect(laneBytes.all().equals(connectEsBytes.all())).toBe(true);
    await r.stop();
    const [laneEnd, connectEsEnd] = await Promise.all([lane.ended, connectEs.ended]);
    expect(laneEnd.status).toBe("0");
    expect(connectEsEnd.status).toBe("0");
    // The registrar's stop closed the connection (on Node 24, before a close listener could be added).
    session.destroy();
  });

  it("ends a Connect stream with DEADLINE_EXCEEDED at the deadline its client set", async () => {
    const r = await startTestRegistrar(["--cluster", "hub"]);
    started.push(r);
    const client = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: r.url, httpVersion: "2" }),
    );
    const types: number[] = [];
    let failure: unknown;
    try {
      for await (const event of client.watchConfig({}, { timeoutMs: 400 })) types.push(event.type);
    } catch (error) {
      failure = error;
    }
    expect(types.length).toBeGreaterThan(0);
    expect(failure).toBeInstanceOf(ConnectError);
    expect((failure as ConnectError).code).toBe(Code.DeadlineExceeded);
  });
});
