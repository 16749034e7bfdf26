/** The checks of ConfigService requests: what each fault is refused with, and what a good request becomes. */
import { create } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  ConfigView,
  ListAllConfigRequestSchema,
  ListConfigRequestSchema,
  WatchConfigRequestSchema,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { createPageTokens, queryFingerprint } from "../../services/registrar/service/page-token.js";
import {
  checkListAllConfigRequest,
  checkListConfigRequest,
  checkPageSize,
  checkWatchConfigRequest,
  DEFAULT_PAGE_SIZE,
  invalid,
  MAX_PAGE_SIZE,
  MAX_REQUEST_SERVICES,
} from "../../services/registrar/service/request-checks.js";

/** The INVALID_ARGUMENT message `run` throws; fails the test when it throws anything else. */
function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(ConnectError);
    expect(Code[(error as ConnectError).code]).toBe(Code[Code.InvalidArgument]);
    return (error as ConnectError).rawMessage;
  }
  throw new Error("expected the request to be refused");
}

const tokens = createPageTokens({ key: Buffer.alloc(32, 7), now: () => 1_000 });
const listConfigFingerprint = queryFingerprint(["ListConfig", "hub", []]);
const listConfigToken = tokens.encode(listConfigFingerprint, {
  revision: 7,
  origin: "hub",
  service: "ns/a",
});

describe("checkListConfigRequest", () => {
  const refused: [string, Partial<Parameters<typeof checkListConfigRequest>[0]>, RegExp][] = [
    [
      "a bad origin",
      { originCluster: "Evil/Origin" },
      /^origin_cluster: cluster name "Evil\/Origin"/,
    ],
    ["a service without a slash", { services: ["no-slash"] }, /must be "namespace\/name"/],
    ["a name like the mesh record's", { services: ["@mesh/x"] }, /namespace "@mesh"/],
    ["a bad namespace", { services: ["ns/a", "Bad/name"] }, /namespace "Bad" is not a DNS-1123/],
    [
      "too many services",
      { services: Array.from({ length: MAX_REQUEST_SERVICES + 1 }, (_, i) => `ns/s${i}`) },
      /^services names 10001 services; at most 10000 are allowed$/,
    ],
    ["a negative page size", { pageSize: -1 }, /^page_size -1 is negative$/],
    [
      "a page size too large",
      { pageSize: 5000 },
      /^page_size 5000 is larger than the maximum of 1000$/,
    ],
    [
      "a garbage token",
      { pageToken: "%%%garbage" },
      /^page_token is not a token returned by this service$/,
    ],
    [
      "a token of no shape",
      { pageToken: "eyJhIjoxfQ" },
      /^page_token is not a token returned by this service$/,
    ],
    [
      "another query's token",
      { services: ["ns/a"], pageToken: listConfigToken },
      /^page_token belongs to a different query/,
    ],
    // Several faults: the first in field order is reported.
    ["a bad origin and a bad page size", { originCluster: "X", pageSize: -1 }, /^origin_cluster/],
    ["bad services and a bad token", { services: ["x"], pageToken: "%" }, /must be "namespace/],
    ["a bad page size and a bad token", { pageSize: -2, pageToken: "%" }, /^page_size -2/],
  ];
  for (const [name, fields, message] of refused) {
    it(`refuses ${name}`, () => {
      const request = create(ListConfigRequestSchema, fields);
      expect(refusal(() => checkListConfigRequest(request, "hub", tokens))).toMatch(message);
    });
  }

  const accepted: [string, Partial<Parameters<typeof checkListConfigRequest>[0]>, object][] = [
    [
      "an empty request, as the own origin's first page",
      {},
      { origin: "hub", services: undefined, pageSize: DEFAULT_PAGE_SIZE, cursor: undefined },
    ],
    ["another origin", { originCluster: "east" }, { origin: "east" }],
    [
      "services, as a set",
      { services: ["ns/b", "ns/a", "ns/b"] },
      { services: new Set(["ns/a", "ns/b"]) },
    ],
    [
      "the mesh record beside a service",
      { services: ["@mesh", "ns/a"] },
      { services: new Set(["@mesh", "ns/a"]) },
    ],
    ["the largest page size", { pageSize: MAX_PAGE_SIZE }, { pageSize: MAX_PAGE_SIZE }],
    [
      "its own token",
      { pageToken: listConfigToken },
      {
        cursor: { revision: 7, origin: "hub", service: "ns/a" },
        fingerprint: listConfigFingerprint,
      },
    ],
  ];
  for (const [name, fields, expected] of accepted) {
    it(`accepts ${name}`, () => {
      const request = create(ListConfigRequestSchema, fields);
      expect(checkListConfigRequest(request, "hub", tokens)).toMatchObject(expected);
    });
  }

  it("binds the fingerprint to the origin and services, not their order or the page size", () => {
    const check = (fields: Partial<Parameters<typeof checkListConfigRequest>[0]>) =>
      checkListConfigRequest(create(ListConfigRequestSchema, fields), "hub", tokens).fingerprint;
    expect(check({ services: ["ns/a", "ns/b"], pageSize: 3 })).toBe(
      check({ services: ["ns/b", "ns/a"], pageSize: 9 }),
    );
    expect(check({ originCluster: "hub" })).toBe(check({}));
    expect(check({ originCluster: "east" })).not.toBe(check({}));
    expect(check({ services: ["ns/a"] })).not.toBe(check({}));
  });
});

describe("checkListAllConfigRequest", () => {
  const refused: [string, Partial<Parameters<typeof checkListAllConfigRequest>[0]>, RegExp][] = [
    ["an unknown view", { view: 99 as ConfigView }, /^view 99 is not a ConfigView value$/],
    ["a bad service", { services: ["a/b/c"] }, /must be "namespace\/name"/],
    ["a bad page size", { pageSize: 1001 }, /^page_size 1001 is larger/],
    [
      "ListConfig's token",
      { pageToken: listConfigToken },
      /^page_token belongs to a different query/,
    ],
    ["a bad service and an unknown view", { services: ["x"], view: 99 as ConfigView }, /namespace/],
    ["an unknown view and a bad page size", { view: 7 as ConfigView, pageSize: -1 }, /^view 7/],
  ];
  for (const [name, fields, message] of refused) {
    it(`refuses ${name}`, () => {
      const request = create(ListAllConfigRequestSchema, fields);
      expect(refusal(() => checkListAllConfigRequest(request, tokens))).toMatch(message);
    });
  }

  const views: [ConfigView, "effective" | "all"][] = [
    [ConfigView.UNSPECIFIED, "effective"],
    [ConfigView.EFFECTIVE, "effective"],
    [ConfigView.ALL_ORIGINS, "all"],
  ];
  for (const [view, expected] of views) {
    it(`reads ${ConfigView[view]} as the ${expected} view`, () => {
      const query = checkListAllConfigRequest(create(ListAllConfigRequestSchema, { view }), tokens);
      expect(query).toMatchObject({ view: expected, pageSize: DEFAULT_PAGE_SIZE });
    });
  }

  it("binds the fingerprint to the view: a token of one view is refused by the other", () => {
    const all = checkListAllConfigRequest(
      create(ListAllConfigRequestSchema, { view: ConfigView.ALL_ORIGINS }),
      tokens,
    );
    const token = tokens.encode(all.fingerprint, { revision: 3, origin: "hub", service: "a/b" });
    const again = checkListAllConfigRequest(
      create(ListAllConfigRequestSchema, { view: ConfigView.ALL_ORIGINS, pageToken: token }),
      tokens,
    );
    expect(again.cursor).toEqual({ revision: 3, origin: "hub", service: "a/b" });
    expect(
      refusal(() =>
        checkListAllConfigRequest(create(ListAllConfigRequestSchema, { pageToken: token }), tokens),
      ),
    ).toMatch(/belongs to a different query/);
  });
});

describe("checkWatchConfigRequest", () => {
  const cases: [string, Partial<Parameters<typeof checkWatchConfigRequest>[0]>, RegExp | object][] =
    [
      ["a bad service", { services: ["nope"] }, /must be "namespace\/name"/],
      ["an unknown view", { view: 5 as ConfigView }, /^view 5 is not a ConfigView value$/],
      ["a negative resume revision", { resumeRevision: -5n }, /^resume_revision -5 is negative$/],
      [
        "a bad view and a negative revision",
        { view: 5 as ConfigView, resumeRevision: -1n },
        /^view/,
      ],
      ["an empty request", {}, { services: undefined, view: "effective", resumeRevision: 0 }],
      [
        "services, a view and a resume revision",
        { services: ["ns/a"], view: ConfigView.ALL_ORIGINS, resumeRevision: 42n },
        { services: new Set(["ns/a"]), view: "all", resumeRevision: 42 },
      ],
      [
        "the mesh record alone",
        { services: ["@mesh"] },
        { services: new Set(["@mesh"]), view: "effective", resumeRevision: 0 },
      ],
      [
        "the largest safe resume revision",
        { resumeRevision: BigInt(Number.MAX_SAFE_INTEGER) },
        { services: undefined, view: "effective", resumeRevision: Number.MAX_SAFE_INTEGER },
      ],
      [
        "a resume revision beyond it, as a snapshot",
        { resumeRevision: BigInt(Number.MAX_SAFE_INTEGER) + 1n },
        { services: undefined, view: "effective", resumeRevision: 0 },
      ],
    ];
  for (const [name, fields, expected] of cases) {
    const request = create(WatchConfigRequestSchema, fields);
    if (expected instanceof RegExp) {
      it(`refuses ${name}`, () => {
        expect(refusal(() => checkWatchConfigRequest(request))).toMatch(expected);
      });
    } else {
      it(`accepts ${name}`, () => expect(checkWatchConfigRequest(request)).toEqual(expected));
    }
  }
});

describe("refusals", () => {
  it("cut a message longer than 512 characters", () => {
    expect(invalid("x".repeat(512)).rawMessage).toBe("x".repeat(512));
    expect(invalid("x".repeat(513)).rawMessage).toBe(`${"x".repeat(512)}…`);
    const huge = `ns/${"a".repeat(5000)}`;
    const message = refusal(() =>
      checkListConfigRequest(create(ListConfigRequestSchema, { services: [huge] }), "hub", tokens),
    );
    expect(message).toHaveLength(513);
    expect(message.startsWith(`service "ns/aaa`)).toBe(true);
  });

  it("default a page size of 0 and keep any other in range", () => {
    expect([0, 1, 100, 1000].map(checkPageSize)).toEqual([DEFAULT_PAGE_SIZE, 1, 100, 1000]);
  });
});
