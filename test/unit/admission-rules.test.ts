import { describe, expect, it } from "vitest";
import {
  admitBodyChunk,
  admitOneMore,
  classifyRequest,
  type RequestKind,
  type RequestShape,
} from "../../services/registrar/server/admission-rules.js";

describe("admitOneMore", () => {
  const cases: [number, number, boolean][] = [
    [0, 1, true],
    [99, 100, true],
    [100, 100, false],
    [101, 100, false],
  ];
  for (const [inUse, limit, admitted] of cases) {
    it(`${inUse} of ${limit} in use: ${admitted ? "admits" : "refuses"}`, () =>
      expect(admitOneMore(inUse, limit)).toBe(admitted));
  }
});

describe("classifyRequest", () => {
  const cases: [string, RequestShape, RequestKind][] = [
    [
      "an HTTP/2 GET",
      { httpVersionMajor: 2, endAfterHeaders: true, streamingRequest: false },
      "bodiless",
    ],
    [
      "an HTTP/2 POST",
      { httpVersionMajor: 2, endAfterHeaders: false, streamingRequest: false },
      "unary-body",
    ],
    [
      "an HTTP/2 bidi stream",
      { httpVersionMajor: 2, endAfterHeaders: false, streamingRequest: true },
      "request-stream",
    ],
    ["an HTTP/1.1 GET", { httpVersionMajor: 1, streamingRequest: false }, "bodiless"],
    [
      "an HTTP/1.1 empty POST",
      { httpVersionMajor: 1, contentLength: "0", streamingRequest: false },
      "bodiless",
    ],
    [
      "an HTTP/1.1 POST",
      { httpVersionMajor: 1, contentLength: "12", streamingRequest: false },
      "unary-body",
    ],
    [
      "an HTTP/1.1 chunked POST",
      { httpVersionMajor: 1, transferEncoding: "chunked", streamingRequest: false },
      "unary-body",
    ],
  ];
  for (const [name, shape, kind] of cases)
    it(`${name} is ${kind}`, () => expect(classifyRequest(shape)).toBe(kind));
});

describe("admitBodyChunk", () => {
  const cases: [number, number, number, boolean][] = [
    [0, 100, 100, true],
    [50, 50, 100, true],
    [50, 51, 100, false],
    [100, 1, 100, false],
  ];
  for (const [held, chunk, max, admitted] of cases) {
    it(`${held} held + ${chunk} of ${max}: ${admitted ? "fits" : "does not fit"}`, () =>
      expect(admitBodyChunk(held, chunk, max)).toBe(admitted));
  }
});
