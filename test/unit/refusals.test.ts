import { Registry } from "prom-client";
import { describe, expect, it, vi } from "vitest";
import { createRefusals, REFUSAL_REASONS } from "../../services/registrar/server/refusals.js";
import { captureLogger } from "../support/capture-logger.js";

describe("createRefusals", () => {
  it("counts every refusal by reason, every reason from zero", async () => {
    const registry = new Registry();
    const refusals = createRefusals({ registry, logger: captureLogger().logger });
    refusals.refuse("max_connections");
    refusals.refuse("max_connections");
    refusals.refuse("ping_timeout");
    const text = await registry.metrics();
    for (const reason of REFUSAL_REASONS) {
      const count = reason === "max_connections" ? 2 : reason === "ping_timeout" ? 1 : 0;
      expect(text).toContain(`aether_config_server_refusals_total{reason="${reason}"} ${count}`);
    }
  });

  it("logs each reason at most once per interval, then how many lines were left out", () => {
    vi.useFakeTimers({ now: 0 });
    try {
      const log = captureLogger();
      const refusals = createRefusals({
        registry: new Registry(),
        logger: log.logger,
        logIntervalMs: 10_000,
      });
      refusals.refuse("max_connections", { remoteAddress: "10.0.0.1" });
      refusals.refuse("max_connections");
      refusals.refuse("max_connections");
      refusals.refuse("header_timeout");
      vi.advanceTimersByTime(10_000);
      refusals.refuse("max_connections");
      const lines = log.lines.map((line) => [
        line.level,
        line.reason ?? line.kind,
        line.suppressed,
      ]);
      expect(lines).toEqual([
        [40, "max_connections", undefined],
        [40, "header_timeout", undefined],
        [40, "max_connections", 2],
        [40, "max_connections", undefined],
      ]);
      expect(log.lines[0]).toMatchObject({ remoteAddress: "10.0.0.1" });
    } finally {
      vi.useRealTimers();
    }
  });
});
