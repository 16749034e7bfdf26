import { describe, expect, it } from "vitest";
import {
  http1ServerOptions,
  http2ServerOptions,
} from "../../services/registrar/server/node-server-options.js";
import { DEFAULT_SERVER_LIMITS } from "../../services/registrar/server/server-limits.js";

describe("the Node server options of the limits", () => {
  it("carry the defaults", () => {
    expect(http1ServerOptions(DEFAULT_SERVER_LIMITS)).toEqual({
      maxHeaderSize: 16_384,
      headersTimeout: 10_000,
      requestTimeout: 20_000,
      connectionsCheckingInterval: 1_000,
    });
    expect(http2ServerOptions(DEFAULT_SERVER_LIMITS)).toEqual({
      settings: { maxConcurrentStreams: 100, maxHeaderListSize: 16_384 },
      maxSessionMemory: 10,
    });
  });

  it("check short timeouts often enough, and keep at least 1 MB of session memory", () => {
    const limits = {
      ...DEFAULT_SERVER_LIMITS,
      headerTimeoutMs: 300,
      requestBodyTimeoutMs: 200,
      maxSessionMemoryBytes: 100_000,
    };
    expect(http1ServerOptions(limits)).toMatchObject({
      headersTimeout: 300,
      requestTimeout: 500,
      connectionsCheckingInterval: 75,
    });
    expect(http2ServerOptions(limits).maxSessionMemory).toBe(1);
  });
});
