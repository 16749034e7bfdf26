/**
 * System `curl` speaking the Connect protocol by hand (JSON POST, and GET for
 * the side-effect-free RPCs) to `aether-registrar` running as a real OS
 * process: what an operator debugging a registrar would type. Plus gRPC over
 * h2c with a hand-made frame, to see that a request message that does not
 * decode is InvalidArgument there too.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, fromBinary, type JsonObject, toBinary } from "@bufbuild/protobuf";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  ListConfigRequestSchema,
  ListConfigResponseSchema,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { type RegistrarProcess, stopAllRegistrars } from "../support/registrar-process.js";
import {
  CONFIG_SERVICE,
  execFileAsync,
  grpcProjection,
  httpProjection,
  removeSeedFiles,
  servicesOf,
  stamped,
  startSeededRegistrar,
} from "./fixtures.js";

interface CurlResponse {
  readonly status: number;
  readonly httpVersion: string;
  readonly contentType: string;
  readonly body: Buffer;
  json(): JsonObject;
}

const WRITE_OUT_MARKER = "\n--curl-write-out--";

/** Runs system curl (no shell) and returns the response status, HTTP version, content type and body. */
async function curl(args: readonly string[]): Promise<CurlResponse> {
  const { stdout } = await execFileAsync(
    "curl",
    [
      "--silent",
      "--show-error",
      "--max-time",
      "10",
      "--write-out",
      `${WRITE_OUT_MARKER}%{http_code} %{http_version} %{content_type}`,
      ...args,
    ],
    { encoding: "buffer", timeout: 15_000 },
  );
  const cut = stdout.lastIndexOf(WRITE_OUT_MARKER);
  const [status = "", httpVersion = "", ...contentType] = stdout
    .subarray(cut + WRITE_OUT_MARKER.length)
    .toString("utf8")
    .split(" ");
  const body = stdout.subarray(0, cut);
  return {
    status: Number(status),
    httpVersion,
    contentType: contentType.join(" "),
    body,
    json: () => JSON.parse(body.toString("utf8")) as JsonObject,
  };
}

const CLUSTER = "east";
const T1 = "2026-11-29T12:00:00.000000000Z";
const SEED: JsonObject[] = [
  httpProjection("shop/checkout", T1, "spoofed"),
  grpcProjection("payments/ledger", T1),
  // A third-party client sees a service's HTTP filters (the HTTPFilter escape hatch) as plain JSON.
  {
    ...httpProjection("web/frontend", T1),
    httpFilters: [
      {
        namespace: "web",
        name: "frontend-authz",
        phase: "HTTP_FILTER_PHASE_AUTHZ",
        priority: 5,
        targets: [{ service: "web/frontend", port: 8080, sectionName: "http" }],
        extAuthz: {
          backend: { service: "security/authz", port: 9000 },
          timeout: "0.250s",
          failureMode: "EXTENSION_FAILURE_MODE_DENY",
        },
      },
    ],
  },
];
const EXPECTED = new Map(SEED.map((p) => [String(p.service), stamped(p, CLUSTER)]));
const SERVICES = [...EXPECTED.keys()].sort();

describe("system curl with the Connect protocol against a registrar process", () => {
  let registrar: RegistrarProcess;
  const url = (method: string) => `${registrar.url}/${CONFIG_SERVICE}/${method}`;

  /** A Connect unary POST with a JSON body over HTTP/1.1. */
  const postJson = (method: string, body: string, contentType = "application/json") =>
    curl([
      "--http1.1",
      "-X",
      "POST",
      "-H",
      `content-type: ${contentType}`,
      "-H",
      "connect-protocol-version: 1",
      "--data-binary",
      body,
      url(method),
    ]);

  /** A Connect unary GET with the request in the query string. */
  const get = (method: string, query: Record<string, string>) =>
    curl(["--http1.1", `${url(method)}?${new URLSearchParams(query).toString()}`]);

  beforeAll(async () => {
    registrar = await startSeededRegistrar(CLUSTER, SEED);
  });
  afterAll(async () => {
    await stopAllRegistrars();
    await removeSeedFiles();
  });

  it("POST ListAllConfig with a JSON body in the ALL_ORIGINS view returns every projection, stamped, as proto JSON", async () => {
    const response = await postJson("ListAllConfig", '{"view":"CONFIG_VIEW_ALL_ORIGINS"}');
    expect(response.status).toBe(200);
    expect(response.httpVersion).toBe("1.1");
    expect(response.contentType).toBe("application/json");
    const body = response.json() as { projections: JsonObject[]; revision: string };
    expect(BigInt(body.revision)).toBeGreaterThan(0n);
    expect(body).not.toHaveProperty("nextPageToken");
    expect(servicesOf(body.projections).sort()).toEqual(SERVICES);
    for (const projection of body.projections) {
      expect(projection).toEqual(EXPECTED.get(String(projection.service)));
    }
  });

  it("POST ListAllConfig pages with pageSize and nextPageToken at one revision", async () => {
    const first = (
      await postJson("ListAllConfig", '{"view":"CONFIG_VIEW_EFFECTIVE","pageSize":2}')
    ).json() as { projections: JsonObject[]; nextPageToken: string; revision: string };
    expect(servicesOf(first.projections)).toEqual(SERVICES.slice(0, 2));
    expect(first.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
    const second = (
      await postJson(
        "ListAllConfig",
        JSON.stringify({
          view: "CONFIG_VIEW_EFFECTIVE",
          pageSize: 2,
          pageToken: first.nextPageToken,
        }),
      )
    ).json() as { projections: JsonObject[]; nextPageToken?: string; revision: string };
    expect(servicesOf(second.projections)).toEqual(SERVICES.slice(2));
    expect(second.nextPageToken).toBeUndefined();
    expect(second.revision).toBe(first.revision);
  });

  it("answers a Connect GET of ListConfig with the request as URL-encoded JSON (encoding=json, connect=v1)", async () => {
    const response = await get("ListConfig", {
      connect: "v1",
      encoding: "json",
      message: JSON.stringify({ services: ["shop/checkout", "web/frontend"] }),
    });
    expect(response.status).toBe(200);
    expect(response.contentType).toBe("application/json");
    const body = response.json() as { projections: JsonObject[]; revision: string };
    expect(BigInt(body.revision)).toBeGreaterThan(0n);
    expect(servicesOf(body.projections).sort()).toEqual(["shop/checkout", "web/frontend"]);
    for (const projection of body.projections) {
      expect(projection).toEqual(EXPECTED.get(String(projection.service)));
    }
  });

  it("answers a Connect GET of ListConfig with the request as base64url binary (encoding=proto, base64=1)", async () => {
    const request = create(ListConfigRequestSchema, { services: ["payments/ledger"] });
    const response = await get("ListConfig", {
      connect: "v1",
      encoding: "proto",
      base64: "1",
      message: Buffer.from(toBinary(ListConfigRequestSchema, request)).toString("base64url"),
    });
    expect(response.status).toBe(200);
    expect(response.contentType).toBe("application/proto");
    const body = fromBinary(ListConfigResponseSchema, response.body);
    expect(body.revision).toBeGreaterThan(0n);
    expect(body.projections.map((p) => [p.service, p.originCluster])).toEqual([
      ["payments/ledger", CLUSTER],
    ]);
  });

  it("answers POST ListAllConfig over h2c (prior knowledge) with the EFFECTIVE view ordered by service", async () => {
    const response = await curl([
      "--http2-prior-knowledge",
      "-H",
      "content-type: application/json",
      "--data-binary",
      "{}",
      url("ListAllConfig"),
    ]);
    expect(response.status).toBe(200);
    expect(response.httpVersion).toBe("2");
    expect(servicesOf((response.json() as { projections: JsonObject[] }).projections)).toEqual(
      SERVICES,
    );
  });

  it.each([
    {
      what: "a service that is not namespace/name",
      request: () => postJson("ListConfig", '{"services":["Bad Name"]}'),
      message: 'service "Bad Name" must be "namespace/name"',
    },
    {
      what: "a negative page_size",
      request: () => postJson("ListAllConfig", '{"pageSize":-1}'),
      message: "page_size -1 is negative",
    },
    {
      what: "a page_size above the maximum",
      request: () => postJson("ListConfig", '{"pageSize":5000}'),
      message: "page_size 5000 is larger than the maximum of 1000",
    },
    {
      what: "a garbage page_token",
      request: () => postJson("ListAllConfig", '{"pageToken":"Z2FyYmFnZQ"}'),
      message: "page_token is not a token returned by this service",
    },
    {
      what: "a view number that is not a ConfigView",
      request: () => postJson("ListAllConfig", '{"view":7}'),
      message: "view 7 is not a ConfigView value",
    },
    {
      what: "a body that is not JSON",
      request: () => postJson("ListConfig", "{not json"),
      message: /^cannot decode message aether\.registry\.v1\.ListConfigRequest from JSON/,
    },
    {
      what: "a field of the wrong JSON type",
      request: () => postJson("ListConfig", '{"pageSize":"ten"}'),
      message: /^cannot decode field aether\.registry\.v1\.ListConfigRequest\.page_size from JSON/,
    },
    {
      what: "a GET whose message is not JSON",
      request: () => get("ListConfig", { connect: "v1", encoding: "json", message: "{not json" }),
      message: /^cannot decode message aether\.registry\.v1\.ListConfigRequest from JSON/,
    },
    {
      what: "a binary body that is not a protobuf message",
      request: () => postJson("ListConfig", "{}", "application/proto"),
      message: "the request message does not decode: premature EOF",
    },
    {
      what: "a misspelled JSON field",
      request: () => postJson("ListConfig", '{"service":["shop/checkout"]}'),
      message:
        'cannot decode message aether.registry.v1.ListConfigRequest from JSON: key "service" is unknown',
    },
    {
      what: "an unknown enum name",
      request: () => postJson("ListAllConfig", '{"view":"CONFIG_VIEW_ALL_ORIGIN"}'),
      message:
        'cannot decode enum aether.registry.v1.ConfigView from JSON: "CONFIG_VIEW_ALL_ORIGIN"',
    },
    {
      what: "a GET whose base64 message is not base64",
      request: () =>
        get("ListConfig", { connect: "v1", encoding: "proto", base64: "1", message: "***" }),
      message:
        "the request message does not decode: the message query parameter is not base64: invalid base64 string",
    },
    {
      what: "a GET whose base64 message is not a protobuf message",
      request: () =>
        get("ListConfig", { connect: "v1", encoding: "proto", base64: "1", message: "_w" }),
      message: "the request message does not decode: premature EOF",
    },
    {
      what: "a GET with a bad service",
      request: () =>
        get("ListConfig", {
          connect: "v1",
          encoding: "json",
          message: '{"services":["Bad Name"]}',
        }),
      message: 'service "Bad Name" must be "namespace/name"',
    },
  ])(
    "answers $what with HTTP 400, code invalid_argument and a message saying what is wrong",
    async ({ request, message }) => {
      const response = await request();
      expect(response.status).toBe(400);
      expect(response.contentType).toBe("application/json");
      const body = response.json() as { code: string; message: string };
      expect(body.code).toBe("invalid_argument");
      if (typeof message === "string") expect(body.message).toBe(message);
      else expect(body.message).toMatch(message);
    },
  );

  it("answers a content type the Connect protocol does not define with HTTP 415 (Connect spec), for POST and GET", async () => {
    const post = await postJson("ListConfig", "{}", "text/plain");
    expect(post.status).toBe(415);
    const getWithoutEncoding = await get("ListConfig", { connect: "v1", message: "{}" });
    expect(getWithoutEncoding.status).toBe(415);
  });

  it.each(["ListConfig", "WatchConfig"])(
    "answers gRPC %s over h2c whose frame does not decode with grpc-status 3 (InvalidArgument)",
    async (method) => {
      // A gRPC frame: uncompressed, 5 bytes long, holding a varint that never ends.
      const dir = await mkdtemp(join(tmpdir(), "aether-curl-"));
      const frame = join(dir, "garbage-frame.bin");
      await writeFile(frame, Buffer.from([0, 0, 0, 0, 5, 0xff, 0xff, 0xff, 0xff, 0xff]));
      const response = await curl([
        "--http2-prior-knowledge",
        "--dump-header",
        "-",
        "-H",
        "content-type: application/grpc",
        "-H",
        "te: trailers",
        "--data-binary",
        `@${frame}`,
        url(method),
      ]).finally(() => rm(dir, { recursive: true, force: true }));
      expect(response.status).toBe(200);
      expect(response.httpVersion).toBe("2");
      // With --dump-header, curl prints the trailers after the headers.
      const dump = response.body.toString("latin1");
      expect(dump).toMatch(/^grpc-status: 3\r?$/m);
      const message = /^grpc-message: (.*?)\r?$/m.exec(dump)?.[1] ?? "";
      expect(decodeURIComponent(message)).toBe(
        "the request message does not decode: premature EOF",
      );
    },
  );

  it("still answers normally after every malformed request", async () => {
    await postJson("ListConfig", "{not json");
    await postJson("ListConfig", "{}", "text/plain");
    await postJson("ListConfig", "{}", "application/proto");
    await get("ListConfig", { connect: "v1", encoding: "proto", base64: "1", message: "***" });
    const response = await postJson("ListConfig", "{}");
    expect(response.status).toBe(200);
    expect(
      servicesOf((response.json() as { projections: JsonObject[] }).projections).sort(),
    ).toEqual(SERVICES);
    const healthz = await curl([`${registrar.url}/healthz`]);
    expect(healthz.status).toBe(200);
    expect(healthz.body.toString("utf8")).toBe("ok\n");
  });
});
