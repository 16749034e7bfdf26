import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  frameMessage,
  type LaneRequestHead,
  laneEnd,
  matchLaneRequest,
  readRequestMessage,
} from "../../services/registrar/service/watch-lane-protocol.js";

const head = (
  headers: Record<string, string | undefined>,
  overrides: Partial<LaneRequestHead> = {},
): LaneRequestHead => ({ method: "POST", httpVersionMajor: 2, headers, ...overrides });

describe("which WatchConfig requests the lane takes", () => {
  it.each([
    {
      name: "Connect binary",
      headers: { "content-type": "application/connect+proto" },
      want: "connect",
    },
    {
      name: "Connect binary, version 1",
      headers: { "content-type": "application/connect+proto", "connect-protocol-version": "1" },
      want: "connect",
    },
    {
      name: "Connect binary over HTTP/1.1",
      headers: { "content-type": "application/connect+proto" },
      http: 1,
      want: "connect",
    },
    { name: "gRPC", headers: { "content-type": "application/grpc" }, want: "grpc" },
    {
      name: "gRPC +proto, identity",
      headers: { "content-type": "application/grpc+proto", "grpc-encoding": "identity" },
      want: "grpc",
    },
    {
      name: "gRPC over HTTP/1.1",
      headers: { "content-type": "application/grpc" },
      http: 1,
      want: undefined,
    },
    {
      name: "Connect JSON",
      headers: { "content-type": "application/connect+json" },
      want: undefined,
    },
    { name: "gRPC JSON", headers: { "content-type": "application/grpc+json" }, want: undefined },
    {
      name: "gRPC-Web",
      headers: { "content-type": "application/grpc-web+proto" },
      want: undefined,
    },
    {
      name: "Connect unary type",
      headers: { "content-type": "application/proto" },
      want: undefined,
    },
    {
      name: "a compressed Connect request",
      headers: { "content-type": "application/connect+proto", "connect-content-encoding": "gzip" },
      want: undefined,
    },
    {
      name: "a compressed gRPC request",
      headers: { "content-type": "application/grpc", "grpc-encoding": "gzip" },
      want: undefined,
    },
    {
      name: "an unknown Connect version",
      headers: { "content-type": "application/connect+proto", "connect-protocol-version": "2" },
      want: undefined,
    },
    {
      name: "a malformed Connect timeout",
      headers: { "content-type": "application/connect+proto", "connect-timeout-ms": "soon" },
      want: undefined,
    },
    {
      name: "a malformed gRPC timeout",
      headers: { "content-type": "application/grpc", "grpc-timeout": "5x" },
      want: undefined,
    },
    { name: "no content type", headers: {}, want: undefined },
  ])("$name: $want", ({ headers, http, want }) => {
    expect(matchLaneRequest(head(headers, { httpVersionMajor: http ?? 2 }))?.protocol).toBe(want);
  });

  it("takes only POST", () => {
    expect(
      matchLaneRequest(head({ "content-type": "application/grpc" }, { method: "GET" })),
    ).toBeUndefined();
  });

  it.each([
    {
      headers: { "content-type": "application/connect+proto", "connect-timeout-ms": "2500" },
      ms: 2500,
    },
    { headers: { "content-type": "application/grpc", "grpc-timeout": "3S" }, ms: 3000 },
    { headers: { "content-type": "application/grpc", "grpc-timeout": "200m" }, ms: 200 },
    { headers: { "content-type": "application/grpc" }, ms: undefined },
  ])("reads the client's deadline: $ms ms", ({ headers, ms }) => {
    expect(matchLaneRequest(head(headers))?.timeoutMs).toBe(ms);
  });

  it("answers with the request's content type", () => {
    expect(matchLaneRequest(head({ "content-type": "Application/GRPC+proto" }))?.contentType).toBe(
      "application/grpc+proto",
    );
  });
});

describe("reading the request message", () => {
  const message = Uint8Array.of(0x0a, 0x01, 0x61);
  it("takes one uncompressed frame", () => {
    const read = readRequestMessage(frameMessage(message), 100);
    expect(read).toEqual({ ok: true, message });
  });
  it("takes an empty message", () => {
    expect(readRequestMessage(frameMessage(new Uint8Array(0)), 100)).toEqual({
      ok: true,
      message: new Uint8Array(0),
    });
  });
  it.each([
    { name: "no body", body: new Uint8Array(0), reason: /holds 0 bytes, not a message/ },
    { name: "a short header", body: Uint8Array.of(0, 0, 0), reason: /holds 3 bytes/ },
    {
      name: "a compressed flag",
      body: Uint8Array.of(1, 0, 0, 0, 0),
      reason: /compressed envelope/,
    },
    {
      name: "an end-stream flag",
      body: Uint8Array.of(2, 0, 0, 0, 0),
      reason: /flags 2, expected 0/,
    },
    {
      name: "a truncated message",
      body: Uint8Array.of(0, 0, 0, 0, 4, 1, 2),
      reason: /announces 4/,
    },
    {
      name: "bytes after the message",
      body: Uint8Array.of(0, 0, 0, 0, 1, 1, 2),
      reason: /announces 1/,
    },
    {
      name: "a message over the limit",
      body: Uint8Array.of(0, 0, 0, 1, 0),
      reason: /256 bytes is over 100/,
    },
  ])("refuses $name", ({ body, reason }) => {
    const read = readRequestMessage(body, 100);
    expect(read.ok).toBe(false);
    if (!read.ok) expect(read.reason).toMatch(reason);
  });
});

describe("how a lane stream ends", () => {
  it("Connect: an end-stream frame, empty when OK", () => {
    const end = laneEnd("connect", undefined);
    expect(end.kind).toBe("frame");
    if (end.kind !== "frame") return;
    expect(end.frame[0]).toBe(2);
    expect(new TextDecoder().decode(end.frame.subarray(5))).toBe("{}");
  });
  it("Connect: the error's code, message and metadata", () => {
    const error = new ConnectError("fell behind", Code.ResourceExhausted, { "retry-after": "1" });
    const end = laneEnd("connect", error);
    if (end.kind !== "frame") throw new Error("expected a frame");
    expect(JSON.parse(new TextDecoder().decode(end.frame.subarray(5)))).toEqual({
      error: { code: "resource_exhausted", message: "fell behind" },
      metadata: { "retry-after": ["1"] },
    });
  });
  it("gRPC: trailers with status 0 when OK", () => {
    expect(laneEnd("grpc", undefined)).toEqual({
      kind: "trailers",
      trailers: { "grpc-status": "0" },
    });
  });
  it("gRPC: the status, the percent-encoded message (':' and '/' kept) and the metadata", () => {
    const error = new ConnectError("spiffe://a/b: 100% gone", Code.Unavailable, {
      "grpc-retry-pushback-ms": "500",
    });
    const end = laneEnd("grpc", error);
    expect(end).toEqual({
      kind: "trailers",
      trailers: {
        "grpc-status": String(Code.Unavailable),
        "grpc-message": "spiffe://a/b: 100%25 gone",
        "grpc-retry-pushback-ms": "500",
      },
    });
  });
});
