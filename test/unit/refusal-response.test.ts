import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { refusalResponse } from "../../services/registrar/server/refusal-response.js";

describe("refusalResponse", () => {
  const trailersOnly = (contentType: string) => ({
    status: 200,
    headers: {
      "content-type": contentType,
      "retry-after": "2",
      "grpc-retry-pushback-ms": "1500",
      "grpc-status": String(Code.ResourceExhausted),
      "grpc-message": "busy%3B%20retry%20later",
    },
    body: "",
  });
  const cases: [
    string | undefined,
    { status: number; headers: Record<string, string>; body: string },
  ][] = [
    ["application/grpc", trailersOnly("application/grpc")],
    ["application/grpc+proto", trailersOnly("application/grpc+proto")],
    ["application/grpc-web+proto", trailersOnly("application/grpc-web+proto")],
    ["application/grpc-web-text", trailersOnly("application/grpc-web-text")],
    [
      "application/json",
      {
        status: 429,
        headers: { "content-type": "application/json", "retry-after": "2" },
        body: '{"code":"resource_exhausted","message":"busy; retry later"}',
      },
    ],
    [
      undefined,
      {
        status: 429,
        headers: { "content-type": "application/json", "retry-after": "2" },
        body: '{"code":"resource_exhausted","message":"busy; retry later"}',
      },
    ],
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

  it("maps other codes to their Connect HTTP status", () => {
    expect(refusalResponse("application/proto", Code.DeadlineExceeded, "slow", 0).status).toBe(504);
    expect(
      refusalResponse("application/proto", Code.DeadlineExceeded, "slow", 0).headers["retry-after"],
    ).toBe("1");
  });
});
