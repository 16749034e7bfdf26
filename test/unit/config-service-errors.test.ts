import { Code } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { toConnectError } from "../../services/registrar/service/config-service.js";
import { captureLogger } from "../support/capture-logger.js";

const coded = (code: string, message = code) => Object.assign(new Error(message), { code });

describe("errors that escape a ConfigService handler", () => {
  it.each([
    ["ECONNRESET", coded("ECONNRESET", "read ECONNRESET")],
    ["EPIPE", coded("EPIPE")],
    [
      "ERR_STREAM_DESTROYED",
      coded("ERR_STREAM_DESTROYED", "Cannot call write after a stream was destroyed"),
    ],
    ["ERR_HTTP2_INVALID_STREAM", coded("ERR_HTTP2_INVALID_STREAM")],
  ])("a client gone away (%s) is Canceled and logged at debug only", (_name, error) => {
    const { logger, lines } = captureLogger();
    const mapped = toConnectError(error, logger);
    expect([mapped.code, mapped.rawMessage]).toEqual([Code.Canceled, "the client went away"]);
    expect(lines.filter((l) => l.level !== 20)).toEqual([]);
    expect(lines).toHaveLength(1);
  });

  it.each([
    ["a plain Error", new Error("boom")],
    ["an unknown code", coded("EWHATEVER")],
    ["a thrown string", "boom"],
  ])("%s is Internal without details, logged at error", (_name, error) => {
    const { logger, lines } = captureLogger();
    const mapped = toConnectError(error, logger);
    expect([mapped.code, mapped.rawMessage]).toEqual([Code.Internal, "internal error"]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      [50, "unexpected error serving ConfigService"],
    ]);
  });
});
