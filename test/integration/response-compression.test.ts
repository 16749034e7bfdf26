/**
 * What the registrar compresses, over a real socket: gzip for a large answer
 * when the client accepts it, nothing for a client that asks only for brotli
 * (brotli at its default quality costs seconds of CPU per listing: an
 * amplifier for any client), nothing for small answers, and a brotli request
 * body refused as unsupported instead of decoded.
 */
import { request } from "node:http";
import { gunzipSync } from "node:zlib";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListAllConfigRequestSchema,
  ListAllConfigResponseSchema,
  ListConfigRequestSchema,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { COMPRESS_MIN_BYTES } from "../../services/registrar/server/bounded-compression.js";
import { createMemoryStore } from "../../services/registrar/store/memory-store.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection } from "../support/projections.js";

const SERVICE = "/aether.registry.v1.ConfigService";
const SERVICES = 300;

let registrar: TestRegistrar;

beforeAll(async () => {
  const store = createMemoryStore({ origin: "east" });
  for (let i = 0; i < SERVICES; i++) {
    await store.put(makeProjection(`shop/svc-${String(i).padStart(3, "0")}`));
  }
  registrar = await startTestRegistrar(["--cluster", "east"], { store });
});
afterAll(async () => {
  await registrar.stop();
});

/** A Connect unary call in binary over HTTP/1.1, its answer as it came over the wire. */
function call(path: string, body: Uint8Array, headers: Record<string, string>) {
  return new Promise<{ status: number; encoding: string | null; bytes: Uint8Array }>(
    (resolve, reject) => {
      // node:http, not fetch: fetch would take the gzip off before we see it.
      const req = request(
        `${registrar.url}${SERVICE}/${path}`,
        { method: "POST", headers: { "content-type": "application/proto", ...headers } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              encoding: (res.headers["content-encoding"] as string | undefined) ?? null,
              bytes: new Uint8Array(Buffer.concat(chunks)),
            }),
          );
          res.on("error", reject);
        },
      );
      req.on("error", reject);
      req.end(body);
    },
  );
}

const listAll = toBinary(
  ListAllConfigRequestSchema,
  create(ListAllConfigRequestSchema, { pageSize: SERVICES }),
);

describe("response compression", () => {
  it("gzips a large answer for a client that accepts gzip", async () => {
    const answer = await call("ListAllConfig", listAll, { "accept-encoding": "br, gzip" });
    expect(answer.status).toBe(200);
    expect(answer.encoding).toBe("gzip");
    const plain = gunzipSync(answer.bytes);
    expect(plain.byteLength).toBeGreaterThanOrEqual(COMPRESS_MIN_BYTES);
    expect(answer.bytes.byteLength).toBeLessThan(plain.byteLength / 2);
    const decoded = fromBinary(ListAllConfigResponseSchema, plain);
    expect(decoded.projections).toHaveLength(SERVICES);
  });

  it("never answers in brotli: a client asking only for br gets the answer uncompressed", async () => {
    const answer = await call("ListAllConfig", listAll, { "accept-encoding": "br" });
    expect(answer.status).toBe(200);
    expect(answer.encoding).toBeNull();
    const decoded = fromBinary(ListAllConfigResponseSchema, answer.bytes);
    expect(decoded.projections).toHaveLength(SERVICES);
  });

  it("leaves an answer under the threshold uncompressed", async () => {
    const one = toBinary(
      ListConfigRequestSchema,
      create(ListConfigRequestSchema, { services: ["shop/svc-001"] }),
    );
    const answer = await call("ListConfig", one, { "accept-encoding": "gzip" });
    expect(answer.status).toBe(200);
    expect(answer.encoding).toBeNull();
    expect(answer.bytes.byteLength).toBeLessThan(COMPRESS_MIN_BYTES);
    expect(answer.bytes.byteLength).toBeGreaterThan(0);
  });

  it("refuses a brotli-compressed request body as unsupported, naming what it accepts", async () => {
    const answer = await call("ListAllConfig", new Uint8Array([1, 2, 3]), {
      "content-encoding": "br",
    });
    expect(answer.status).toBe(501);
    const error = JSON.parse(new TextDecoder().decode(answer.bytes)) as {
      code: string;
      message: string;
    };
    expect(error.code).toBe("unimplemented");
    expect(error.message).toContain("gzip");
  });
});
