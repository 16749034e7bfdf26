import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import { describeCallError } from "../../clients/aetherctl/error-message.js";
import { countStatusProblems, formatStatus } from "../../clients/aetherctl/status-format.js";
import { GetConfigStatusResponseSchema } from "../../gen/aether/registry/v1/config_service_pb.js";

const NOW = Date.parse("2026-11-29T12:05:00Z");
type StatusInit = MessageInitShape<typeof GetConfigStatusResponseSchema>;

const base: StatusInit = {
  cluster: "spoke",
  controlCluster: "hub",
  store: "etcd",
  synced: true,
  revision: 42n,
  origins: [
    {
      origin: "hub",
      projections: 2,
      newestVersion: "2026-11-29T12:00:00.000000000Z",
      oldestVersion: "2026-11-29T11:05:00.000000000Z",
      trusted: true,
    },
    { origin: "west", projections: 1, newestVersion: "x", oldestVersion: "", trusted: false },
  ],
  export: { enabled: false, disabledReason: "control cluster is hub" },
};

const HEADER = [
  "cluster:          spoke",
  "control cluster:  hub",
  "store:            etcd",
  "synced:           yes",
  "revision:         42",
  "",
  "ORIGINS (2)",
  "ORIGIN  PROJECTIONS  NEWEST                               OLDEST                               TRUSTED",
  "hub     2            2026-11-29T12:00:00.000000000Z (5m)  2026-11-29T11:05:00.000000000Z (1h)  yes",
  "west    1            x (-)                                -                                    no",
  "",
].join("\n");

describe("formatStatus", () => {
  it.each<{ name: string; status: StatusInit; want: string }>([
    {
      name: "a spoke with nothing wrong",
      status: base,
      want: `${HEADER}\nREJECTIONS: none\n\nCONFLICTS: none\n\nEXPORT\n  enabled:  no (control cluster is hub)\n`,
    },
    {
      name: "rejections and conflicts",
      status: {
        ...base,
        rejections: [
          {
            service: "shop/cart",
            originCluster: "west",
            reason: "untrusted_origin",
            message: "only hub is trusted",
          },
        ],
        conflicts: [
          {
            service: "shop/cart",
            winnerOrigin: "hub",
            winnerVersion: "v2",
            loserOrigins: ["east", "west"],
          },
        ],
      },
      want: [
        HEADER.trimEnd(),
        "",
        "REJECTIONS (1)",
        "SERVICE    ORIGIN  REASON            MESSAGE",
        "shop/cart  west    untrusted_origin  only hub is trusted",
        "",
        "CONFLICTS (1)",
        "SERVICE    WINNER  VERSION  LOSERS",
        "shop/cart  hub     v2       east,west",
        "",
        "EXPORT",
        "  enabled:  no (control cluster is hub)",
        "",
      ].join("\n"),
    },
    {
      name: "a federated exporter with route rejections and source problems",
      status: {
        cluster: "hub",
        controlCluster: "",
        store: "memory",
        synced: false,
        revision: 0n,
        export: {
          enabled: true,
          source: "dir:/etc/routes",
          leader: true,
          services: 3,
          lastSuccessTime: "2026-11-29T12:04:00Z",
          lastError: "",
          routeRejections: [
            {
              kind: "HTTPRoute",
              namespace: "shop",
              name: "bad",
              reason: "invalid_regex",
              message: "rules[0]: bad regex",
            },
          ],
          sourceProblems: [{ where: "routes.yaml:3", message: "not YAML" }],
        },
      },
      want: [
        "cluster:          hub",
        "control cluster:  none (federated: every origin is trusted)",
        "store:            memory",
        "synced:           no",
        "revision:         0",
        "",
        "ORIGINS: none",
        "",
        "REJECTIONS: none",
        "",
        "CONFLICTS: none",
        "",
        "EXPORT",
        "  enabled:       yes",
        "  source:        dir:/etc/routes",
        "  leader:        yes",
        "  services:      3",
        "  signing key:   none (unsigned)",
        "  last success:  2026-11-29T12:04:00Z (1m ago)",
        "  last error:    none",
        "  ROUTE REJECTIONS (1)",
        "  KIND       NS/NAME   REASON         MESSAGE",
        "  HTTPRoute  shop/bad  invalid_regex  rules[0]: bad regex",
        "  SOURCE PROBLEMS (1)",
        "  WHERE          MESSAGE",
        "  routes.yaml:3  not YAML",
        "",
      ].join("\n"),
    },
    {
      name: "an exporter that never succeeded, and no export status at all",
      status: {
        cluster: "hub",
        export: {
          enabled: true,
          source: "kubernetes",
          lastError: "etcd down",
          signingKeyId: "1f0e2d3c4b5a6978",
        },
      },
      want: expect.stringContaining(
        "  signing key:   1f0e2d3c4b5a6978\n  last success:  never\n  last error:    etcd down\n  ROUTE REJECTIONS: none\n  SOURCE PROBLEMS: none\n",
      ),
    },
  ])("$name", ({ status, want }) => {
    expect(formatStatus(create(GetConfigStatusResponseSchema, status), NOW)).toEqual(want);
  });

  it("renders a truncated list with its total and what is not shown", () => {
    const text = formatStatus(
      create(GetConfigStatusResponseSchema, {
        cluster: "hub",
        rejections: [
          { service: "a/b", originCluster: "east", reason: "too_large", message: "big" },
          { reason: "truncated", message: "384,853 more rejections not shown (384,854 in all)" },
        ],
        export: {
          enabled: true,
          sourceProblems: [
            { where: "a.yaml:1", message: "bad" },
            { where: "(truncated)", message: "9 more problems not shown (10 in all)" },
          ],
        },
      }),
      NOW,
    );
    expect(text).toContain(
      [
        "REJECTIONS (1 of 384,854)",
        "SERVICE  ORIGIN  REASON     MESSAGE",
        "a/b      east    too_large  big",
        "… 384,853 more not shown",
      ].join("\n"),
    );
    expect(text).toContain(
      [
        "  SOURCE PROBLEMS (1 of 10)",
        "  WHERE     MESSAGE",
        "  a.yaml:1  bad",
        "  … 9 more not shown",
      ].join("\n"),
    );
  });

  it("renders lists of hundreds of thousands of entries without overflowing the stack", () => {
    const many = 300_000;
    const status = create(GetConfigStatusResponseSchema, {
      cluster: "hub",
      rejections: Array.from({ length: many }, (_, i) => ({
        service: `ns/s-${i}`,
        originCluster: "east",
        reason: "untrusted_origin",
        message: "untrusted",
      })),
      export: {
        enabled: true,
        sourceProblems: Array.from({ length: many }, (_, i) => ({
          where: `f${i}.yaml:1`,
          message: "bad",
        })),
      },
    });
    const text = formatStatus(status, NOW);
    expect(text).toContain(`REJECTIONS (${many})`);
    expect(text).toContain(`  SOURCE PROBLEMS (${many})`);
    expect(countStatusProblems(status)).toBe(2 * many);
  });

  it("says why the registrar is not synced, and that what follows is the view it kept", () => {
    const text = formatStatus(
      create(GetConfigStatusResponseSchema, {
        cluster: "a",
        synced: false,
        storeError: "store unavailable: the registrar cannot reach its config store right now",
      }),
      NOW,
    );
    expect(text).toContain(
      "synced:           no: store unavailable: the registrar cannot reach its config store right now (what follows is the view it last synced, still served to its watch streams)\n",
    );
  });

  it("says export is off when the response has no export state", () => {
    const text = formatStatus(create(GetConfigStatusResponseSchema, { cluster: "a" }), NOW);
    expect(text.endsWith("EXPORT\n  enabled:  no\n")).toBe(true);
  });
});

describe("countStatusProblems", () => {
  it.each<[string, StatusInit, number]>([
    ["nothing", base, 0],
    ["conflicts do not count", { conflicts: [{ service: "a/b" }] }, 0],
    ["rejections", { rejections: [{ service: "a/b" }, { service: "c/d" }] }, 2],
    [
      "route rejections and source problems",
      { rejections: [{}], export: { routeRejections: [{}], sourceProblems: [{}, {}] } },
      4,
    ],
    [
      "what truncated lists count in their final entries",
      {
        rejections: [{}, { reason: "truncated", message: "1,900 more rejections not shown (…)" }],
        export: {
          routeRejections: [
            { reason: "truncated", message: "7 more route rejections not shown (…)" },
          ],
          sourceProblems: [{}, { where: "(truncated)", message: "53 more problems not shown (…)" }],
        },
      },
      1 + 1_900 + 7 + 1 + 53,
    ],
  ])("%s", (_name, status, want) => {
    expect(countStatusProblems(create(GetConfigStatusResponseSchema, status))).toBe(want);
  });
});

describe("describeCallError", () => {
  const url = "http://127.0.0.1:1";
  const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), {
    code: "ECONNREFUSED",
  });
  it.each([
    [
      "an unreachable registrar",
      new ConnectError(
        "connect ECONNREFUSED 127.0.0.1:1",
        Code.Unavailable,
        undefined,
        undefined,
        refused,
      ),
      "aetherctl: unavailable: cannot reach the registrar at http://127.0.0.1:1 (connect ECONNREFUSED 127.0.0.1:1); is it running? (set --registrar URL or $AETHER_REGISTRAR)\n",
    ],
    [
      "a store outage is reported as the registrar says",
      new ConnectError("store unavailable: etcd timed out", Code.Unavailable),
      "aetherctl: unavailable: store unavailable: etcd timed out\n",
    ],
    [
      "a bad request",
      new ConnectError('service "Shop" must be "namespace/name"', Code.InvalidArgument),
      'aetherctl: invalid_argument: service "Shop" must be "namespace/name"\n',
    ],
    [
      "a timeout",
      new ConnectError("the operation timed out", Code.DeadlineExceeded),
      "aetherctl: deadline_exceeded: the registrar at http://127.0.0.1:1 did not answer in time (the operation timed out); raise --timeout or check the registrar\n",
    ],
    [
      "a server that is not a registrar",
      new ConnectError("HTTP 404", Code.Unimplemented),
      "aetherctl: unimplemented: http://127.0.0.1:1 does not serve aether.registry.v1.ConfigService (HTTP 404); is it a registrar?\n",
    ],
    ["anything else", new Error("boom"), "aetherctl: unknown: boom\n"],
  ])("%s", (_name, error, want) => {
    expect(describeCallError(error, url)).toBe(want);
  });
});
