/** Builders of small, valid projections for tests. */
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import {
  type MeshConfigSchema,
  PathMatchType,
  PathModifierType,
  type Route,
  RouteKind,
  RouteRole,
  RouteRuleSchema,
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
  StringMatchType,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { MESH_RECORD } from "../../services/common/service-name.js";

/** The fields of a MeshConfig, for {@link meshRecord}. */
export type MeshConfigInit = MessageInitShape<typeof MeshConfigSchema>;

/**
 * An origin's mesh record: the projection keyed `@mesh` that carries only
 * `config` (named `default` unless it says otherwise), from `origin`
 * (default `hub`) at `version` (default {@link versionAt}(1)).
 */
export function meshRecord(
  config: MeshConfigInit,
  options: { origin?: string; version?: string } = {},
): ServiceConfigProjection {
  return create(ServiceConfigProjectionSchema, {
    service: MESH_RECORD,
    originCluster: options.origin ?? "hub",
    version: options.version ?? versionAt(1),
    meshConfig: { name: "default", ...config },
  });
}

/** The fields of a rule, for {@link ruleProjection}. */
export type RuleInit = MessageInitShape<typeof RouteRuleSchema>;

/**
 * A projection of `service` from origin `east` with one producer route
 * `shop/r` of `kind` (default HTTP), attached to `port` of the service, that
 * holds `rules`.
 */
export function ruleProjection(
  service: string,
  rules: RuleInit[],
  options: { kind?: RouteKind; port: number },
): ServiceConfigProjection {
  return create(ServiceConfigProjectionSchema, {
    service,
    originCluster: "east",
    routes: [
      {
        kind: options.kind ?? RouteKind.HTTP,
        namespace: "shop",
        name: "r",
        role: RouteRole.PRODUCER,
        parentRefs: [{ service, port: options.port }],
        rules,
      },
    ],
  });
}

/** A version string `n` nanoseconds after a fixed instant, so tests can order versions. */
export function versionAt(n: number): string {
  return `2026-11-01T00:00:00.${String(n).padStart(9, "0")}Z`;
}

/**
 * A projection of `service` (`namespace/name`) with one producer HTTP route
 * whose single backend is `backend` (default: the service itself on port 80).
 */
export function makeProjection(
  service: string,
  options: { version?: string; backend?: string; origin?: string } = {},
): ServiceConfigProjection {
  const [namespace, name] = service.split("/") as [string, string];
  return create(ServiceConfigProjectionSchema, {
    service,
    originCluster: options.origin ?? "",
    version: options.version ?? versionAt(1),
    routes: [
      {
        kind: RouteKind.HTTP,
        namespace,
        name: `${name}-route`,
        role: RouteRole.PRODUCER,
        parentRefs: [{ service, port: 80 }],
        rules: [
          {
            matches: [{ path: { type: PathMatchType.PATH_PREFIX, value: "/" } }],
            backends: [{ service: options.backend ?? service, port: 80, weight: 1 }],
          },
        ],
      },
    ],
  });
}

/**
 * A canary projection of `service` (`namespace/name`): one producer HTTP
 * route whose rule matches `POST /cart…` with header `x-beta: 1`, sets a
 * request header and rewrites the prefix to `/v2`, and sends `weights[0]`
 * to `NAME-v1` and `weights[1]` to `NAME-v2` (default 80/20, both port 80),
 * with a 10s request timeout; at `version` (default {@link versionAt}(1)).
 */
export function canaryProjection(
  service: string,
  options: { version?: string; weights?: readonly [number, number] } = {},
): ServiceConfigProjection {
  const [namespace, name] = service.split("/") as [string, string];
  const [stable, canary] = options.weights ?? [80, 20];
  const projection = makeProjection(service, { version: options.version ?? versionAt(1) });
  const route = projection.routes[0] as Route;
  route.name = `${name}-canary`;
  route.rules = [
    create(RouteRuleSchema, {
      name: "beta",
      matches: [
        {
          path: { type: PathMatchType.PATH_PREFIX, value: "/cart" },
          method: "POST",
          headers: [{ type: StringMatchType.EXACT, name: "x-beta", value: "1" }],
        },
      ],
      filters: [
        {
          filter: {
            case: "requestHeaderModifier",
            value: { set: [{ name: "x-canary", value: "yes" }] },
          },
        },
        {
          filter: {
            case: "urlRewrite",
            value: { path: { type: PathModifierType.REPLACE_PREFIX_MATCH, value: "/v2" } },
          },
        },
      ],
      backends: [
        { service: `${namespace}/${name}-v1`, port: 80, weight: stable },
        { service: `${namespace}/${name}-v2`, port: 80, weight: canary },
      ],
      timeouts: { request: { seconds: 10n } },
    }),
  ];
  return projection;
}
