import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  drainableBody,
  grpcPercentEncode,
  refusalResponse,
} from "../../services/registrar/server/refusal-response.js";

describe("refusalResponse", () => {
  const grpcStatus = {
    "grpc-status": String(Code.ResourceExhausted),
    "grpc-message": "busy; retry later",
    "grpc-retry-pushback-ms": "1500",
  };
  const connectError = {
    status: 429,
    headers: { "content-type": "application/json", "retry-after": "2" },
    body: '{"code":"resource_exhausted","message":"busy; retry later"}',
  };
  const cases: [string | undefined, Record<string, unknown>][] = [
    [
      "application/grpc",
      {
        status: 200,
        headers: { "content-type": "application/grpc", "retry-after": "2" },
        body: "",
        trailers: grpcStatus,
      },
    ],
    [
      "application/grpc+proto",
      {
        status: 200,
        headers: { "content-type": "application/grpc+proto", "retry-after": "2" },
        body: "",
        trailers: grpcStatus,
      },
    ],
    ["application/json", connectError],
    [undefined, connectError],
  ];
  for (const [contentType, expected] of cases) {
    it(`answers ${contentType ?? "a request without content type"}`, () => {
      const response = refusalResponse(
        contentType,
        Code.ResourceExhausted,
        "busy; retry later",
        1_500,
      );
      expect({ ...response, body: new TextDecoder().decode(response.body) }).toEqual(expected);
    });
  }

  it("answers gRPC-Web with a trailer frame, base64 for grpc-web-text", () => {
    const trailer =
      "grpc-message: busy; retry later\r\ngrpc-retry-pushback-ms: 1500\r\ngrpc-status: 8\r\n";
    for (const [type, decode] of [
      ["application/grpc-web+proto", (b: Uint8Array) => Buffer.from(b)],
      [
        "application/grpc-web-text",
        (b: Uint8Array) => Buffer.from(Buffer.from(b).toString(), "base64"),
      ],
    ] as const) {
      const response = refusalResponse(type, Code.ResourceExhausted, "busy; retry later", 1_500);
      expect(response.headers).toEqual({ "content-type": type, "retry-after": "2" });
      const frame = decode(response.body);
      expect(frame.readUInt8(0)).toBe(0x80);
      expect(frame.readUInt32BE(1)).toBe(frame.length - 5);
      expect(frame.subarray(5).toString("latin1")).toBe(trailer);
    }
  });

  it("answers Connect streaming with an end-stream message", () => {
    const response = refusalResponse("application/connect+json", Code.Unavailable, "later", 1_000);
    expect(response.status).toBe(200);
    expect(response.headers).toEqual({
      "content-type": "application/connect+json",
      "retry-after": "1",
    });
    const body = Buffer.from(response.body);
    expect(body.readUInt8(0)).toBe(2);
    expect(body.readUInt32BE(1)).toBe(body.length - 5);
    expect(JSON.parse(body.subarray(5).toString("utf8"))).toEqual({
      error: { code: "unavailable", message: "later" },
    });
  });

  it("maps other codes to their Connect HTTP status, without retry advice when none is given", () => {
    expect(refusalResponse("application/proto", Code.DeadlineExceeded, "slow", 0).status).toBe(504);
    expect(refusalResponse("application/proto", Code.DeadlineExceeded, "slow", 0).headers).toEqual({
      "content-type": "application/json",
    });
    expect(refusalResponse("application/grpc", Code.DeadlineExceeded, "slow", 0).trailers).toEqual({
      "grpc-status": "4",
      "grpc-message": "slow",
    });
  });

  it("percent-encodes grpc-message as the gRPC spec does, so a SPIFFE ID stays readable", () => {
    expect(grpcPercentEncode("spiffe://east.mesh/ns/a is denied: 100%")).toBe(
      "spiffe://east.mesh/ns/a is denied: 100%25",
    );
    expect(grpcPercentEncode("tab\tnewline\n é")).toBe("tab%09newline%0A %C3%A9");
    const response = refusalResponse(
      "application/grpc",
      Code.PermissionDenied,
      "spiffe://a/b x",
      0,
    );
    expect(response.trailers?.["grpc-message"]).toBe("spiffe://a/b x");
  });
});

describe("drainableBody", () => {
  it.each([
    { headers: {}, drainable: true },
    { headers: { "content-length": "0" }, drainable: true },
    { headers: { "content-length": "65536" }, drainable: true },
    { headers: { "content-length": "65537" }, drainable: false },
    { headers: { "content-length": "12, 12" }, drainable: false },
    { headers: { "content-length": "-1" }, drainable: false },
    { headers: { "transfer-encoding": "chunked" }, drainable: false },
    { headers: { "content-length": "2", "transfer-encoding": "chunked" }, drainable: false },
  ])("$headers", ({ headers, drainable }) => {
    expect(drainableBody(headers)).toBe(drainable);
  });
});
