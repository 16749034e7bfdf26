/**
 * The evaluator and `aetherctl explain` on caller-side HTTPFilter
 * references, table-driven: a reference the consumer resolved runs (its
 * contents listed in order with the other extensions), one it could not
 * resolve is never skipped: the request gets 500 (gRPC: Unknown) with the
 * reason, at the rule or at the chosen backend, and nothing after it runs.
 */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import { describeExtensionRef } from "../../clients/aetherctl/extension-ref-describe.js";
import { describeFilter } from "../../clients/aetherctl/projection-describe.js";
import {
  type ExtensionRefSchema,
  FilterSchema,
  HttpFilterPhase,
  RouteKind,
  RouteRole,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { type EvaluatorRequest, evaluate } from "../../services/common/evaluator.js";

type FilterInit = MessageInitShape<typeof FilterSchema>;
type RefInit = MessageInitShape<typeof ExtensionRefSchema>;

const AUTH: RefInit = {
  group: "mesh.aether.dev",
  kind: "HTTPFilter",
  name: "auth",
  httpFilter: {
    namespace: "shop",
    name: "auth",
    phase: HttpFilterPhase.AUTHN,
    extension: { case: "lua", value: { source: "-- a\n-- b" } },
  },
};
const MISSING: RefInit = {
  group: "mesh.aether.dev",
  kind: "HTTPFilter",
  name: "missing",
  unresolvedReason: "not_found: no HTTPFilter shop/missing in this cluster",
};
const OTHER: RefInit = { group: "x.io", kind: "RateLimit", name: "slow" };

const ext = (value: RefInit): FilterInit => ({ filter: { case: "extensionRef", value } });
const header: FilterInit = {
  filter: { case: "requestHeaderModifier", value: { set: [{ name: "x-after", value: "1" }] } },
};

function decideWith(
  ruleFilters: FilterInit[],
  backendFilters: FilterInit[] = [],
  kind = RouteKind.HTTP,
  request: EvaluatorRequest = { kind: "http", method: "GET", host: "cart", path: "/" },
) {
  const projection = create(ServiceConfigProjectionSchema, {
    service: "shop/cart",
    routes: [
      {
        kind,
        namespace: "shop",
        name: "r",
        role: RouteRole.PRODUCER,
        parentRefs: [{ service: "shop/cart" }],
        rules: [
          {
            filters: ruleFilters,
            backends: [{ service: "shop/cart", port: 8080, weight: 1, filters: backendFilters }],
          },
        ],
      },
    ],
  });
  return evaluate({ projections: [projection], request });
}

describe("evaluator: ExtensionRef filters resolved (or not) by the consumer", () => {
  const cases: {
    name: string;
    rule: FilterInit[];
    backend?: FilterInit[];
    outcome: string;
    status: number;
    refs: string[];
    reason?: RegExp;
  }[] = [
    {
      name: "a resolved HTTPFilter runs, in order with other extensions",
      rule: [ext(AUTH), ext(OTHER)],
      outcome: "forwarded",
      status: 200,
      refs: ["auth lua", "slow -"],
    },
    {
      name: "an unresolved one at the rule: 500, and what follows never runs",
      rule: [ext(AUTH), ext(MISSING), header, ext(OTHER)],
      outcome: "unresolved-filter",
      status: 500,
      refs: ["auth lua", "missing -"],
      reason: /HTTPFilter missing cannot run: not_found: no HTTPFilter shop\/missing/,
    },
    {
      name: "an unresolved one at the chosen backend: 500 too",
      rule: [ext(OTHER)],
      backend: [ext(MISSING)],
      outcome: "unresolved-filter",
      status: 500,
      refs: ["slow -", "missing -"],
    },
    {
      name: "a reference nobody resolved (a registrar's view) is listed, not failed",
      rule: [ext({ group: "mesh.aether.dev", kind: "HTTPFilter", name: "auth" })],
      outcome: "forwarded",
      status: 200,
      refs: ["auth -"],
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const decision = decideWith(c.rule, c.backend);
      expect([decision.outcome, decision.status]).toEqual([c.outcome, c.status]);
      expect(
        decision.extensionRefs.map((r) => `${r.name} ${r.httpFilter?.extension.case ?? "-"}`),
      ).toEqual(c.refs);
      if (c.reason !== undefined) expect(decision.reason).toMatch(c.reason);
      if (c.status === 500) {
        expect(decision.requestHeaderChanges).toEqual([]);
        expect(decision.retry).toBeUndefined();
      }
    });
  }

  it("a gRPC call that runs an unresolved one gets 500, gRPC Unknown", () => {
    const decision = decideWith([ext(MISSING)], [], RouteKind.GRPC, {
      kind: "grpc",
      authority: "cart",
      service: "shop.Cart",
      method: "Get",
    });
    expect([decision.outcome, decision.status, decision.grpcStatus]).toEqual([
      "unresolved-filter",
      500,
      "Unknown",
    ]);
  });
});

describe("aetherctl: an ExtensionRef in words", () => {
  const cases: { ref: RefInit; want: string }[] = [
    {
      ref: AUTH,
      want: "mesh.aether.dev/HTTPFilter auth = shop/auth (AuthN, priority 0): lua (2 lines)",
    },
    {
      ref: MISSING,
      want: "mesh.aether.dev/HTTPFilter missing unresolved (500): not_found: no HTTPFilter shop/missing in this cluster",
    },
    { ref: OTHER, want: "x.io/RateLimit slow" },
    {
      ref: { group: "mesh.aether.dev", kind: "HTTPFilter", name: "auth" },
      want: "mesh.aether.dev/HTTPFilter auth (resolved by the caller's cluster)",
    },
  ];
  for (const c of cases) {
    it(c.want, () => {
      const [ref] = decideWith([ext(c.ref)]).extensionRefs;
      expect(ref === undefined ? "" : describeExtensionRef(ref)).toBe(c.want);
      expect(describeFilter(create(FilterSchema, ext(c.ref)))).toBe(`extension ${c.want}`);
    });
  }
});
