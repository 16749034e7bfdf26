/**
 * The export side of GetConfigStatus: the export controller's state mapped
 * to its message with every list bounded, a source's own count of what it
 * left out carried forward, and the encoded message small however large the
 * state.
 */
import { toBinary } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { ExportStatusSchema } from "../../gen/aether/registry/v1/config_service_pb.js";
import type { RouteRejection } from "../../services/common/projector.js";
import type { ExportStatus } from "../../services/registrar/export/export-controller.js";
import {
  boundSourceProblems,
  exportStatusMessage,
} from "../../services/registrar/service/export-status-message.js";

const LONG_MESSAGE = `spec.rules[0].matches[0].path.value is not a valid RE2 expression: ${"(".repeat(5_000)}`;
const SERVICES = Array.from({ length: 50 }, (_, s) => `shop/s-${s}`);

const rejection = (i: number): RouteRejection => ({
  route: { kind: "HTTPRoute", namespace: "shop", name: `r-${i}` },
  reason: "invalid_regex",
  message: LONG_MESSAGE,
  services: SERVICES,
});

const status = (overrides: Partial<ExportStatus>): ExportStatus => ({
  state: "exporting",
  disabledReason: undefined,
  signingKeyId: undefined,
  source: "dir:/etc/routes",
  leader: true,
  term: 1,
  services: 3,
  reconciles: 1,
  writes: 0,
  repairs: 0,
  lastSuccessAt: undefined,
  lastError: undefined,
  rejections: [],
  warnings: [],
  sourceProblems: [],
  ...overrides,
});

describe("exportStatusMessage", () => {
  it("keeps short lists as they are", () => {
    const message = exportStatusMessage(
      true,
      status({
        rejections: [{ ...rejection(1), message: "bad", services: ["shop/web"] }],
        sourceProblems: [{ where: "a.yaml:1", message: "not YAML" }],
      }),
    );
    expect(message.routeRejections.map((r) => [r.name, r.reason, r.message, r.services])).toEqual([
      ["r-1", "invalid_regex", "bad", ["shop/web"]],
    ]);
    expect(message.sourceProblems.map((p) => [p.where, p.message])).toEqual([
      ["a.yaml:1", "not YAML"],
    ]);
  });

  it("bounds every list, entry and text, and the encoding with them", () => {
    const many = 384_953;
    const rejections = Array.from({ length: 50_000 }, (_, i) => rejection(i));
    const long = "x".repeat(3_000);
    const sourceProblems = Array.from({ length: many }, (_, i) => ({
      where: `f-${i}.yaml:1`,
      message: long,
    }));
    const message = exportStatusMessage(
      true,
      status({ rejections, sourceProblems, lastError: "e".repeat(100_000) }),
    );
    expect(message.routeRejections).toHaveLength(101);
    expect(message.routeRejections[100]).toMatchObject({
      kind: "",
      name: "",
      reason: "truncated",
      message: "49,900 more route rejections not shown (50,000 in all)",
    });
    expect(message.routeRejections[0]?.services).toHaveLength(21);
    expect(message.routeRejections[0]?.message.length).toBeLessThanOrEqual(1_024);
    expect(message.sourceProblems).toHaveLength(101);
    expect(message.sourceProblems[100]).toMatchObject({
      where: "(truncated)",
      message: "384,853 more problems not shown (384,953 in all)",
    });
    expect(message.lastError.length).toBeLessThanOrEqual(1_024);
    expect(toBinary(ExportStatusSchema, message).length).toBeLessThan(300 * 1024);
  });
});

describe("boundSourceProblems", () => {
  it("carries a source's own count of what it left out forward", () => {
    const listed = Array.from({ length: 100 }, (_, i) => ({ where: `f-${i}`, message: "bad" }));
    const fromSource = [
      ...listed,
      { where: "(truncated)", message: "384,853 more problems not shown (384,953 in all)" },
    ];
    const kept = boundSourceProblems(fromSource, 100);
    expect(kept).toHaveLength(101);
    expect(kept[100]?.message).toBe("384,853 more problems not shown (384,953 in all)");
    const fewer = boundSourceProblems(fromSource, 10);
    expect(fewer).toHaveLength(11);
    expect(fewer[10]?.message).toBe("384,943 more problems not shown (384,953 in all)");
  });
});
