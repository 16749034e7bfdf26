import { describe, expect, it } from "vitest";
import { LIMIT_FLAG_OPTIONS } from "../../services/registrar/limit-flags.js";
import { parseRegistrarFlags, REGISTRAR_USAGE } from "../../services/registrar/registrar-flags.js";
import { DEFAULT_SERVER_LIMITS } from "../../services/registrar/server/server-limits.js";
import {
  DEFAULT_MAX_WATCH_BACKLOG,
  DEFAULT_MAX_WATCH_STREAMS,
} from "../../services/registrar/service/watch-stream.js";

function flags(...argv: string[]) {
  const parsed = parseRegistrarFlags(["--cluster", "hub", ...argv]);
  if (parsed === "help") throw new Error("unexpected help");
  return parsed;
}

describe("the limit flags", () => {
  it("default to the production defaults of the server and the watch streams", () => {
    expect(flags()).toMatchObject({
      serverLimits: DEFAULT_SERVER_LIMITS,
      maxWatchStreams: DEFAULT_MAX_WATCH_STREAMS,
      maxWatchBacklog: DEFAULT_MAX_WATCH_BACKLOG,
    });
  });

  it("are all in --help", () => {
    for (const flag of Object.keys(LIMIT_FLAG_OPTIONS))
      expect(REGISTRAR_USAGE).toContain(`--${flag} `);
  });

  it("parse counts, sizes and durations", () => {
    expect(
      flags(
        ...[
          "--max-connections",
          "10",
          "--max-concurrent-streams",
          "7",
          "--max-header-bytes",
          "8KiB",
        ],
        ...["--max-session-memory", "2MiB", "--header-timeout", "2s", "--idle-timeout", "1m"],
        ...["--request-body-timeout", "500ms", "--ping-interval", "0", "--ping-timeout", "5s"],
        ...["--max-request-bytes", "1MiB", "--max-pending-requests", "9"],
        ...["--max-pending-request-bytes", "1MiB", "--max-watch-streams", "3"],
        ...["--max-watch-backlog", "100"],
      ),
    ).toMatchObject({
      serverLimits: {
        maxConnections: 10,
        maxConcurrentStreams: 7,
        maxHeaderBytes: 8_192,
        maxSessionMemoryBytes: 2_097_152,
        headerTimeoutMs: 2_000,
        idleTimeoutMs: 60_000,
        requestBodyTimeoutMs: 500,
        pingIntervalMs: 0,
        pingTimeoutMs: 5_000,
        maxBodyBytes: 1_048_576,
        maxPendingRequests: 9,
        maxPendingRequestBytes: 1_048_576,
      },
      maxWatchStreams: 3,
      maxWatchBacklog: 100,
    });
  });

  const bad: [string[], RegExp][] = [
    [["--max-connections", "0"], /--max-connections must be at least 1/],
    [["--max-connections", "many"], /--max-connections: "many" is not a whole number/],
    [["--max-concurrent-streams", "1.5"], /--max-concurrent-streams: "1.5" is not a whole number/],
    [["--max-header-bytes", "100"], /--max-header-bytes must be at least 1024 bytes/],
    [["--max-session-memory", "512KiB"], /--max-session-memory must be at least 1000000 bytes/],
    [["--header-timeout", "50ms"], /--header-timeout must be at least 100ms/],
    [["--ping-interval", "10ms"], /--ping-interval must be 0 \(no PINGs\) or at least 100ms/],
    [["--request-body-timeout", "soon"], /--request-body-timeout: "soon" is not a duration/],
    [["--max-request-bytes", "4MB"], /--max-request-bytes: "4MB" is not a byte size/],
    [
      ["--max-request-bytes", "8MiB", "--max-pending-request-bytes", "4MiB"],
      /--max-pending-request-bytes must be at least --max-request-bytes/,
    ],
    [["--max-watch-streams", "0"], /--max-watch-streams must be at least 1/],
  ];
  for (const [argv, message] of bad) {
    it(`rejects ${argv.join(" ")}`, () => expect(() => flags(...argv)).toThrow(message));
  }
});
