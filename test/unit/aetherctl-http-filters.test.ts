/**
 * HTTP filters in aetherctl, table-driven: each extension in one line,
 * which filters run for a port (`httpFiltersForPort`, shared), `aetherctl
 * get`'s filter section in run order, and `aetherctl explain`'s
 * `http filters:` value (its line is tested with the rest of explain's).
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { describeHttpFilters } from "../../clients/aetherctl/explain-format.js";
import { describeExtension } from "../../clients/aetherctl/http-filter-describe.js";
import { formatProjectionTree } from "../../clients/aetherctl/projection-tree.js";
import {
  ExtensionFailureMode,
  type HttpFilter,
  HttpFilterPhase,
  HttpFilterSchema,
  ServiceConfigProjectionSchema,
  WasmPullPolicy,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { httpFiltersForPort } from "../../services/common/http-filter-selection.js";

const SHA = "0123456789abcdef".repeat(4);

function filter(name: string, init: MessageInitShape<typeof HttpFilterSchema>) {
  return create(HttpFilterSchema, {
    namespace: "shop",
    name,
    phase: HttpFilterPhase.DEFAULT,
    targets: [{ service: "shop/checkout", port: 0 }],
    ...init,
  });
}

const authz = filter("authz", {
  phase: HttpFilterPhase.AUTHZ,
  priority: 5,
  creationTime: { seconds: 1_793_523_600n, nanos: 0 },
  targets: [{ service: "shop/checkout", port: 8080, sectionName: "http" }],
  extension: {
    case: "extAuthz",
    value: {
      backend: { service: "security/authz", port: 9000 },
      timeout: { seconds: 0n, nanos: 250_000_000 },
      failureMode: ExtensionFailureMode.DENY,
    },
  },
});
const headers = filter("headers", {
  extension: {
    case: "headerMutation",
    value: { response: { set: [{ name: "x-f", value: "1" }], add: [], remove: ["server"] } },
  },
});
const grpcOnly = filter("grpc-only", {
  targets: [{ service: "shop/checkout", port: 9090, sectionName: "grpc" }],
  extension: { case: "lua", value: { source: "a\nb\nc" } },
});

describe("describeExtension", () => {
  const cases: [string, HttpFilter, string][] = [
    ["lua", grpcOnly, "lua (3 lines)"],
    [
      "wasm with config and pull policy",
      filter("w", {
        extension: {
          case: "wasm",
          value: {
            url: "oci://r/f:1",
            sha256: SHA,
            pluginConfigJson: '{"a":1}',
            pullPolicy: WasmPullPolicy.ALWAYS,
          },
        },
      }),
      "wasm oci://r/f:1 sha256 0123456789ab…, config 7 bytes, pull always",
    ],
    ["ext_authz", authz, "ext_authz security/authz:9000, timeout 250ms, fail closed"],
    [
      "ext_proc failing open with the default timeout",
      filter("p", {
        extension: {
          case: "extProc",
          value: {
            backend: { service: "shop/proc", port: 50051 },
            failureMode: ExtensionFailureMode.ALLOW,
          },
        },
      }),
      "ext_proc shop/proc:50051, default timeout, fail open",
    ],
    ["header mutation", headers, "headers response: set x-f: 1; remove server"],
  ];
  it.each(cases)("%s", (_name, f, want) => {
    expect(describeExtension(f)).toBe(want);
  });
});

describe("httpFiltersForPort", () => {
  const projection = create(ServiceConfigProjectionSchema, {
    service: "shop/checkout",
    httpFilters: [authz, grpcOnly, headers],
  });
  it.each([
    [8080, ["authz", "headers"]],
    [9090, ["grpc-only", "headers"]],
    [7, ["headers"]],
  ])("port %i runs %j, in the projection's order", (port, want) => {
    expect(httpFiltersForPort(projection, port).map((f) => f.name)).toEqual(want);
  });
  it("no projection: none", () => {
    expect(httpFiltersForPort(undefined, 80)).toEqual([]);
  });
});

describe("aetherctl get and explain print the filters", () => {
  const projection = create(ServiceConfigProjectionSchema, {
    service: "shop/checkout",
    originCluster: "hub",
    version: "2026-11-29T12:00:00.000000000Z",
    httpFilters: [authz, headers],
  });

  it("get: a count in the header and a section in run order", () => {
    const unsigned = { keyId: undefined, algorithm: undefined, state: "unsigned" } as const;
    const text = formatProjectionTree(projection, Date.parse("2026-11-29T12:05:00Z"), unsigned);
    expect(text).toContain("filters:  2\n");
    expect(text).toContain(
      [
        "HTTP filters, in run order",
        "  1. HTTPFilter shop/authz (AuthZ, priority 5) created 2026-11-01T09:00:00Z",
        "    targets: shop/checkout port http",
        "    runs: ext_authz security/authz:9000, timeout 250ms, fail closed",
        "  2. HTTPFilter shop/headers (Default, priority 0)",
        "    targets: shop/checkout (every port)",
        "    runs: headers response: set x-f: 1; remove server",
        "",
      ].join("\n"),
    );
  });

  it("explain: the filters in one line, in order", () => {
    expect(describeHttpFilters([authz, headers])).toBe(
      "1. shop/authz (AuthZ, priority 5): ext_authz security/authz:9000, timeout 250ms, fail closed; 2. shop/headers (Default, priority 0): headers response: set x-f: 1; remove server",
    );
  });
});
