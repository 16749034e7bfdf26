/**
 * The conversion of one HTTPRoute or GRPCRoute object into a contract `Route`:
 * Gateway API defaults applied, every field validated as the Gateway API CRDs
 * (and their CEL rules) do, backend references resolved against an
 * {@link ObjectIndex}. Invalid input throws a {@link FieldError}; backend
 * references that cannot be resolved are reported as warnings and kept as
 * unresolved backends (see {@link convertRoute}). Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { type Timestamp, TimestampSchema } from "@bufbuild/protobuf/wkt";
import {
  type Backend,
  BackendSchema,
  type Cors,
  CorsSchema,
  ExtensionRefSchema,
  type Filter,
  FilterSchema,
  FractionSchema,
  type GrpcMethodMatch,
  GrpcMethodMatchSchema,
  type HeaderMatch,
  HeaderMatchSchema,
  type HeaderModifier,
  HeaderModifierSchema,
  HeaderValueSchema,
  PathMatchSchema,
  PathMatchType,
  type PathModifier,
  PathModifierSchema,
  PathModifierType,
  type QueryParamMatch,
  QueryParamMatchSchema,
  type RequestMirror,
  RequestMirrorSchema,
  RequestRedirectSchema,
  type Route,
  RouteKind,
  type RouteMatch,
  RouteMatchSchema,
  RouteRole,
  type RouteRule,
  RouteRuleSchema,
  RouteSchema,
  StringMatchType,
  UrlRewriteSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { apiGroupOf, type KubeObject } from "./kube-object.js";
import {
  asObject,
  checkFields,
  fail,
  field,
  groupKind,
  type JsonObject,
  optionalBoolean,
  optionalEnum,
  optionalInteger,
  optionalList,
  optionalObject,
  optionalString,
  optionalStringList,
  quote,
  readCreationNanos,
  requiredString,
} from "./projector-fields.js";
import {
  GRPC_ROUTE,
  HTTP_ROUTE,
  type ObjectIndex,
  type ObjectType,
  SERVICE,
} from "./projector-index.js";
import { readRetry, readTimeouts } from "./projector-rule-policy.js";
import {
  isCorsOrigin,
  isDnsSubdomain,
  isGrpcMethodName,
  isGrpcServiceName,
  isHeaderName,
  isRouteHostname,
  pathValueProblem,
  regexProblem,
} from "./projector-syntax.js";
import { isDns1123Label } from "./service-name.js";

/** A problem found in a route that was projected anyway: a reason and a sentence. */
export interface RouteProblem {
  /** The machine-readable reason, for example `backend_not_found`. */
  readonly reason: string;
  /** A sentence naming the field path. */
  readonly message: string;
}

/** How backend references are resolved. */
export interface ConvertOptions {
  /**
   * Mesh (GAMMA) semantics: backendRefs to other namespaces need no
   * ReferenceGrant (GEP-1294). Otherwise (Gateway semantics) they do.
   */
  readonly mesh: boolean;
}

/** The successful conversion of a route. */
export interface ConvertedRoute {
  /** The route, with no parentRefs and role unspecified. */
  readonly route: Route;
  /** Problems that did not reject the route (unresolvable backend references). */
  readonly warnings: RouteProblem[];
}

/** The HTTP methods an HTTPRoute match may name. */
const HTTP_METHODS = [
  "GET",
  "HEAD",
  "POST",
  "PUT",
  "DELETE",
  "CONNECT",
  "OPTIONS",
  "TRACE",
  "PATCH",
];
const STRING_MATCH_TYPES = ["Exact", "RegularExpression"] as const;
const REDIRECT_STATUS_CODES = [301, 302, 303, 307, 308];
const DEFAULT_REDIRECT_STATUS = 302;
const DEFAULT_CORS_MAX_AGE = 5;
const INT32_MAX = 2_147_483_647;
const MAX_WEIGHT = 1_000_000;
const MAX_TOTAL_MATCHES = 128;

/** The Gateway API limits on list lengths. */
const MAX = { parentRefs: 32, hostnames: 16, rules: 16, matches: 64, items: 16, cors: 64 };

/** A filter config field per filter type. */
const FILTER_FIELDS: Readonly<Record<string, string>> = {
  RequestHeaderModifier: "requestHeaderModifier",
  ResponseHeaderModifier: "responseHeaderModifier",
  RequestMirror: "requestMirror",
  RequestRedirect: "requestRedirect",
  URLRewrite: "urlRewrite",
  ExtensionRef: "extensionRef",
  CORS: "cors",
  ExternalAuth: "externalAuth",
};

/** The filter types that may appear at most once in one filter list. */
const SINGLE_FILTERS = [
  "RequestHeaderModifier",
  "ResponseHeaderModifier",
  "RequestRedirect",
  "URLRewrite",
  "CORS",
];

/**
 * The rule fields the Gateway API defines that the projection does not
 * carry, and why. Session persistence on a route rule is deprecated since
 * Gateway API v1.7 (GEP-1619, GEP-4894): it belongs to the backend.
 */
const RULE_UNSUPPORTED: Readonly<Record<string, string>> = {
  sessionPersistence:
    "Gateway API v1.7 deprecates session persistence on route rules; configure it on the backend (XBackend, GEP-4894) instead",
};

/** What differs between HTTPRoute and GRPCRoute. */
interface Dialect {
  readonly type: ObjectType;
  readonly kind: RouteKind;
  readonly filterTypes: readonly string[];
}

const HTTP: Dialect = {
  type: HTTP_ROUTE,
  kind: RouteKind.HTTP,
  filterTypes: [
    "RequestHeaderModifier",
    "ResponseHeaderModifier",
    "RequestMirror",
    "RequestRedirect",
    "URLRewrite",
    "ExtensionRef",
    "CORS",
  ],
};

const GRPC: Dialect = {
  type: GRPC_ROUTE,
  kind: RouteKind.GRPC,
  filterTypes: ["RequestHeaderModifier", "ResponseHeaderModifier", "RequestMirror", "ExtensionRef"],
};

interface Context {
  readonly index: ObjectIndex;
  readonly dialect: Dialect;
  readonly namespace: string;
  readonly mesh: boolean;
  readonly warnings: RouteProblem[];
}

/**
 * Converts one route object. Throws a FieldError for anything the Gateway API
 * would not accept, or that the contract cannot carry.
 *
 * A backendRef that cannot be resolved (not a core Service, a Service or port
 * that does not exist, or a cross-namespace reference without the
 * ReferenceGrant Gateway semantics require) does not reject the route: as the
 * Gateway API specifies, requests routed to it get a 500 (GRPCRoute: the
 * gRPC status UNAVAILABLE). It is kept as an
 * unresolved backend, a Backend with an empty `service` and its weight, so
 * its share of the traffic fails, and it is reported as a warning. A
 * RequestMirror whose backend cannot be resolved is dropped (the spec says an
 * invalid reference is not configured) and reported as a warning.
 */
export function convertRoute(
  object: KubeObject,
  index: ObjectIndex,
  options: ConvertOptions,
): ConvertedRoute {
  const dialect = dialectOf(object);
  const { metadata, name, namespace } = readIdentity(object);
  const creationTime = readCreationTime(metadata);
  const spec = asObject(object.spec, "spec");
  checkFields(spec, "spec", {
    supported: ["parentRefs", "hostnames", "rules", "useDefaultGateways"],
  });
  optionalList(spec, "parentRefs", "spec", MAX.parentRefs).forEach((ref, i) => {
    checkParentRef(ref, `spec.parentRefs[${i}]`);
  });
  const hostnames = optionalStringList(spec, "hostnames", "spec", MAX.hostnames);
  hostnames.forEach((hostname, i) => {
    if (!isRouteHostname(hostname)) {
      fail("invalid_value", `spec.hostnames[${i}] ${quote(hostname)} is not a valid hostname`);
    }
  });
  const ctx: Context = { index, dialect, namespace, mesh: options.mesh, warnings: [] };
  const rules = readRules(spec, ctx);
  const route = create(RouteSchema, {
    kind: dialect.kind,
    namespace,
    name,
    creationTime,
    role: RouteRole.UNSPECIFIED,
    parentRefs: [],
    hostnames,
    rules,
  });
  return { route, warnings: ctx.warnings };
}

function dialectOf(object: KubeObject): Dialect {
  asObject(object, "the route");
  const group = apiGroupOf(typeof object.apiVersion === "string" ? object.apiVersion : undefined);
  for (const dialect of [HTTP, GRPC]) {
    if (object.kind === dialect.type.kind && group === dialect.type.group) return dialect;
  }
  return fail(
    "invalid_object",
    `the object (apiVersion ${quote(String(object.apiVersion))}, kind ${quote(String(object.kind))}) is not an HTTPRoute or GRPCRoute of ${HTTP_ROUTE.group}`,
  );
}

/**
 * Reads an object's `metadata` with its `name` (a DNS-1123 subdomain) and
 * `namespace` (a DNS-1123 label); throws a FieldError when either is
 * missing or malformed.
 */
export function readIdentity(object: KubeObject): {
  metadata: JsonObject;
  name: string;
  namespace: string;
} {
  const metadata = asObject(object.metadata, "metadata");
  const name = requiredString(metadata, "name", "metadata");
  if (!isDnsSubdomain(name)) {
    fail("invalid_value", `metadata.name ${quote(name)} is not a DNS-1123 subdomain`);
  }
  const namespace = requiredString(metadata, "namespace", "metadata");
  if (!isDns1123Label(namespace)) {
    fail("invalid_value", `metadata.namespace ${quote(namespace)} is not a DNS-1123 label`);
  }
  return { metadata, name, namespace };
}

/**
 * Reads `metadata.creationTimestamp` (RFC 3339) as a Timestamp; undefined
 * when absent. Throws `invalid_value` when it is not RFC 3339.
 */
export function readCreationTime(metadata: JsonObject): Timestamp | undefined {
  const nanos = readCreationNanos(metadata);
  if (nanos === undefined) return undefined;
  const billion = 1_000_000_000n;
  let seconds = nanos / billion;
  let rest = nanos % billion;
  if (rest < 0n) {
    seconds -= 1n;
    rest += billion;
  }
  return create(TimestampSchema, { seconds, nanos: Number(rest) });
}

function checkParentRef(value: unknown, path: string): void {
  const ref = asObject(value, path);
  checkFields(ref, path, {
    supported: ["group", "kind", "namespace", "name", "sectionName", "port"],
  });
  optionalString(ref, "group", path, { max: 253 });
  optionalString(ref, "kind", path, { min: 1, max: 63 });
  optionalString(ref, "namespace", path, { min: 1, max: 63 });
  requiredString(ref, "name", path, { min: 1, max: 253 });
  optionalString(ref, "sectionName", path, { min: 1, max: 253 });
  optionalInteger(ref, "port", path, { min: 1, max: 65535 });
}

function readRules(spec: JsonObject, ctx: Context): RouteRule[] {
  const raw = optionalList(spec, "rules", "spec", MAX.rules);
  // An HTTPRoute without rules gets the CRD default: one rule matching every request.
  const list = raw.length === 0 && ctx.dialect === HTTP ? [{}] : raw;
  const rules = list.map((rule, i) =>
    ctx.dialect === HTTP
      ? readHttpRule(rule, `spec.rules[${i}]`, ctx)
      : readGrpcRule(rule, `spec.rules[${i}]`, ctx),
  );
  const total = rules.reduce((sum, rule) => sum + rule.matches.length, 0);
  if (total > MAX_TOTAL_MATCHES) {
    fail(
      "invalid_value",
      `spec.rules have ${total} matches in all; at most ${MAX_TOTAL_MATCHES} are allowed`,
    );
  }
  return rules;
}

function readRuleName(rule: JsonObject, path: string): string {
  const name = optionalString(rule, "name", path) ?? "";
  if (name !== "" && !isDnsSubdomain(name)) {
    fail("invalid_value", `${path}.name ${quote(name)} is not a DNS-1123 subdomain`);
  }
  return name;
}

function readHttpRule(value: unknown, path: string, ctx: Context): RouteRule {
  const rule = asObject(value, path);
  checkFields(rule, path, {
    supported: ["name", "matches", "filters", "backendRefs", "timeouts", "retry"],
    unsupported: RULE_UNSUPPORTED,
  });
  const name = readRuleName(rule, path);
  const rawMatches = optionalList(rule, "matches", path, MAX.matches);
  // A rule without matches gets the CRD default: one PathPrefix "/" match.
  const matches =
    rawMatches.length === 0
      ? [create(RouteMatchSchema, { path: prefixSlash() })]
      : rawMatches.map((m, i) => readHttpMatch(m, `${path}.matches[${i}]`));
  const filters = readFilters(rule, path, ctx);
  const backendRefs = optionalList(rule, "backendRefs", path, MAX.items);
  if (backendRefs.length > 0 && filters.some((f) => f.filter.case === "requestRedirect")) {
    fail(
      "invalid_filter",
      `${path}.filters has a RequestRedirect filter, which must not be used together with backendRefs`,
    );
  }
  const backends = backendRefs.map((ref, i) => readBackend(ref, `${path}.backendRefs[${i}]`, ctx));
  checkPrefixModifiers(path, matches, [filters, ...backends.map((b) => b.filters)]);
  return create(RouteRuleSchema, {
    name,
    matches,
    filters,
    backends,
    timeouts: readTimeouts(rule, path),
    retry: readRetry(rule, path),
  });
}

function readGrpcRule(value: unknown, path: string, ctx: Context): RouteRule {
  const rule = asObject(value, path);
  checkFields(rule, path, {
    supported: ["name", "matches", "filters", "backendRefs"],
    unsupported: RULE_UNSUPPORTED,
  });
  const name = readRuleName(rule, path);
  const matches = optionalList(rule, "matches", path, MAX.matches).map((m, i) =>
    readGrpcMatch(m, `${path}.matches[${i}]`),
  );
  const filters = readFilters(rule, path, ctx);
  const backends = optionalList(rule, "backendRefs", path, MAX.items).map((ref, i) =>
    readBackend(ref, `${path}.backendRefs[${i}]`, ctx),
  );
  return create(RouteRuleSchema, { name, matches, filters, backends });
}

function prefixSlash() {
  return create(PathMatchSchema, { type: PathMatchType.PATH_PREFIX, value: "/" });
}

/**
 * The CEL rule of HTTPRouteRule: a ReplacePrefixMatch path modifier (in a
 * rule or backend RequestRedirect or URLRewrite) needs exactly one match, a
 * PathPrefix one.
 */
function checkPrefixModifiers(path: string, matches: RouteMatch[], lists: Filter[][]): void {
  const usesPrefix = lists.some((filters) =>
    filters.some(
      (f) =>
        (f.filter.case === "requestRedirect" || f.filter.case === "urlRewrite") &&
        f.filter.value.path?.type === PathModifierType.REPLACE_PREFIX_MATCH,
    ),
  );
  if (!usesPrefix) return;
  if (matches.length !== 1 || matches[0]?.path?.type !== PathMatchType.PATH_PREFIX) {
    fail(
      "invalid_filter",
      `${path} uses a ReplacePrefixMatch path modifier, which requires exactly one match, of type PathPrefix`,
    );
  }
}

function readHttpMatch(value: unknown, path: string): RouteMatch {
  const match = asObject(value, path);
  checkFields(match, path, { supported: ["path", "headers", "queryParams", "method"] });
  return create(RouteMatchSchema, {
    path: readPathMatch(match, path),
    headers: readHeaderMatches(match, path),
    queryParams: readQueryParamMatches(match, path),
    method: optionalEnum(match, "method", path, HTTP_METHODS) ?? "",
  });
}

function readPathMatch(match: JsonObject, path: string) {
  const pathMatch = optionalObject(match, "path", path, { supported: ["type", "value"] });
  if (pathMatch === undefined) return prefixSlash();
  const at = `${path}.path`;
  const type =
    optionalEnum(pathMatch, "type", at, ["Exact", "PathPrefix", "RegularExpression"]) ??
    "PathPrefix";
  const value = optionalString(pathMatch, "value", at, { max: 1024 }) ?? "/";
  if (type === "RegularExpression") {
    checkRegex(value, `${at}.value`);
    return create(PathMatchSchema, { type: PathMatchType.REGULAR_EXPRESSION, value });
  }
  const problem = pathValueProblem(value);
  if (problem !== undefined) fail("invalid_value", `${at}.value ${quote(value)}: ${problem}`);
  const protoType = type === "Exact" ? PathMatchType.EXACT : PathMatchType.PATH_PREFIX;
  return create(PathMatchSchema, { type: protoType, value });
}

function checkRegex(pattern: string, path: string): void {
  const problem = regexProblem(pattern);
  if (problem !== undefined) {
    fail(
      "invalid_regex",
      `${path} ${quote(pattern)} is not a usable regular expression: ${problem}`,
    );
  }
}

interface NameValueMatch {
  readonly type: StringMatchType;
  readonly name: string;
  readonly value: string;
}

/**
 * Reads header-like matches (`{type, name, value}`), keeping only the first of
 * entries with equivalent names, as the spec requires.
 */
function readNameValueMatches(
  match: JsonObject,
  key: string,
  path: string,
  options: { readonly maxValue: number; readonly caseInsensitive: boolean },
): NameValueMatch[] {
  const seen = new Set<string>();
  const result: NameValueMatch[] = [];
  optionalList(match, key, path, MAX.items).forEach((raw, i) => {
    const at = `${path}.${key}[${i}]`;
    const entry = asObject(raw, at);
    checkFields(entry, at, { supported: ["type", "name", "value"] });
    const type = optionalEnum(entry, "type", at, STRING_MATCH_TYPES) ?? "Exact";
    const name = readHeaderName(entry, "name", at);
    const value = requiredString(entry, "value", at, { min: 1, max: options.maxValue });
    if (type === "RegularExpression") checkRegex(value, `${at}.value`);
    const canonicalName = options.caseInsensitive ? name.toLowerCase() : name;
    if (seen.has(canonicalName)) return;
    seen.add(canonicalName);
    result.push({ type: stringMatchType(type), name: canonicalName, value });
  });
  return result;
}

function readHeaderMatches(match: JsonObject, path: string): HeaderMatch[] {
  return readNameValueMatches(match, "headers", path, {
    maxValue: 4096,
    caseInsensitive: true,
  }).map((m) => create(HeaderMatchSchema, m));
}

function readQueryParamMatches(match: JsonObject, path: string): QueryParamMatch[] {
  return readNameValueMatches(match, "queryParams", path, {
    maxValue: 1024,
    caseInsensitive: false,
  }).map((m) => create(QueryParamMatchSchema, m));
}

function stringMatchType(type: "Exact" | "RegularExpression"): StringMatchType {
  return type === "Exact" ? StringMatchType.EXACT : StringMatchType.REGULAR_EXPRESSION;
}

function readHeaderName(object: JsonObject, key: string, path: string): string {
  const name = requiredString(object, key, path, { min: 1, max: 256 });
  if (!isHeaderName(name)) {
    fail("invalid_value", `${path}.${key} ${quote(name)} is not a valid header name`);
  }
  return name;
}

function readGrpcMatch(value: unknown, path: string): RouteMatch {
  const match = asObject(value, path);
  checkFields(match, path, { supported: ["method", "headers"] });
  return create(RouteMatchSchema, {
    grpcMethod: readGrpcMethod(match, path),
    headers: readHeaderMatches(match, path),
  });
}

function readGrpcMethod(match: JsonObject, path: string): GrpcMethodMatch | undefined {
  const method = optionalObject(match, "method", path, {
    supported: ["type", "service", "method"],
  });
  if (method === undefined) return undefined;
  const at = `${path}.method`;
  const type = optionalEnum(method, "type", at, STRING_MATCH_TYPES) ?? "Exact";
  const service = optionalString(method, "service", at, { max: 1024 });
  const name = optionalString(method, "method", at, { max: 1024 });
  if (service === undefined && name === undefined) {
    fail("invalid_value", `${at} must set service, method or both`);
  }
  if (type === "RegularExpression") {
    if (service !== undefined) checkRegex(service, `${at}.service`);
    if (name !== undefined) checkRegex(name, `${at}.method`);
  } else {
    if (service !== undefined && !isGrpcServiceName(service)) {
      fail("invalid_value", `${at}.service ${quote(service)} is not a valid gRPC service name`);
    }
    if (name !== undefined && !isGrpcMethodName(name)) {
      fail("invalid_value", `${at}.method ${quote(name)} is not a valid gRPC method name`);
    }
  }
  return create(GrpcMethodMatchSchema, {
    type: stringMatchType(type),
    service: service ?? "",
    method: name ?? "",
  });
}

function readFilters(owner: JsonObject, path: string, ctx: Context): Filter[] {
  const list = optionalList(owner, "filters", path, MAX.items);
  const counts = new Map<string, number>();
  const filters: Filter[] = [];
  list.forEach((raw, i) => {
    const at = `${path}.filters[${i}]`;
    const filter = asObject(raw, at);
    const type = requiredString(filter, "type", at);
    checkFilterShape(filter, type, at, ctx.dialect);
    const count = (counts.get(type) ?? 0) + 1;
    counts.set(type, count);
    if (count > 1 && SINGLE_FILTERS.includes(type)) {
      fail("invalid_filter", `${at}: a ${type} filter cannot be repeated in ${path}.filters`);
    }
    const converted = readFilter(filter, type, at, ctx);
    if (converted !== undefined) filters.push(converted);
  });
  if (counts.has("RequestRedirect") && counts.has("URLRewrite")) {
    fail(
      "invalid_filter",
      `${path}.filters has both a RequestRedirect and a URLRewrite filter, which cannot be combined`,
    );
  }
  return filters;
}

function checkFilterShape(filter: JsonObject, type: string, path: string, dialect: Dialect): void {
  const routeKind = dialect.type.kind;
  if (type === "ExternalAuth" && dialect === HTTP) {
    fail(
      "unsupported_field",
      `${path}: filter type ExternalAuth is not supported by the projection`,
    );
  }
  if (!dialect.filterTypes.includes(type)) {
    fail("unknown_filter", `${path}.type ${quote(type)} is not a filter type of ${routeKind}`);
  }
  const own = FILTER_FIELDS[type] as string;
  for (const other of Object.values(FILTER_FIELDS)) {
    if (other !== own && field(filter, other) !== undefined) {
      fail("invalid_filter", `${path}.${other} must not be set when the filter type is ${type}`);
    }
  }
  if (field(filter, own) === undefined) {
    fail("invalid_filter", `${path}.${own} is required when the filter type is ${type}`);
  }
  checkFields(filter, path, { supported: ["type", own] });
}

function readFilter(
  filter: JsonObject,
  type: string,
  path: string,
  ctx: Context,
): Filter | undefined {
  const at = `${path}.${FILTER_FIELDS[type] as string}`;
  const config = asObject(field(filter, FILTER_FIELDS[type] as string), at);
  switch (type) {
    case "RequestHeaderModifier":
      return filterOf("requestHeaderModifier", readHeaderModifier(config, at));
    case "ResponseHeaderModifier":
      return filterOf("responseHeaderModifier", readHeaderModifier(config, at));
    case "RequestRedirect":
      return filterOf("requestRedirect", readRedirect(config, at));
    case "URLRewrite":
      return filterOf("urlRewrite", readRewrite(config, at));
    case "RequestMirror": {
      const mirror = readMirror(config, at, ctx);
      return mirror === undefined ? undefined : filterOf("requestMirror", mirror);
    }
    case "ExtensionRef":
      return filterOf("extensionRef", readExtensionRef(config, at));
    default:
      return filterOf("cors", readCors(config, at));
  }
}

type FilterCase = NonNullable<Filter["filter"]["case"]>;
type FilterValue<C extends FilterCase> = Extract<Filter["filter"], { case: C }>["value"];

function filterOf<C extends FilterCase>(kind: C, value: FilterValue<C>): Filter {
  return create(FilterSchema, { filter: { case: kind, value } as Filter["filter"] });
}

/**
 * Reads a Gateway API header modifier (`set`, `add`, `remove`) at `path`,
 * validating names, values and list lengths; throws a FieldError otherwise.
 */
export function readHeaderModifier(config: JsonObject, path: string): HeaderModifier {
  checkFields(config, path, { supported: ["set", "add", "remove"] });
  const headers = (key: string) =>
    optionalList(config, key, path, MAX.items).map((raw, i) => {
      const at = `${path}.${key}[${i}]`;
      const header = asObject(raw, at);
      checkFields(header, at, { supported: ["name", "value"] });
      return create(HeaderValueSchema, {
        name: readHeaderName(header, "name", at),
        value: requiredString(header, "value", at, { min: 1, max: 4096 }),
      });
    });
  const remove = optionalStringList(config, "remove", path, MAX.items);
  remove.forEach((name, i) => {
    if (!isHeaderName(name)) {
      fail("invalid_value", `${path}.remove[${i}] ${quote(name)} is not a valid header name`);
    }
  });
  return create(HeaderModifierSchema, { set: headers("set"), add: headers("add"), remove });
}

function readPathModifier(config: JsonObject, path: string): PathModifier | undefined {
  const modifier = optionalObject(config, "path", path, {
    supported: ["type", "replaceFullPath", "replacePrefixMatch"],
  });
  if (modifier === undefined) return undefined;
  const at = `${path}.path`;
  const types = ["ReplaceFullPath", "ReplacePrefixMatch"] as const;
  const type = optionalEnum(modifier, "type", at, types);
  if (type === undefined) fail("invalid_object", `${at}.type is required`);
  const full = optionalString(modifier, "replaceFullPath", at, { max: 1024 });
  const prefix = optionalString(modifier, "replacePrefixMatch", at, { max: 1024 });
  const [value, other] = type === "ReplaceFullPath" ? [full, prefix] : [prefix, full];
  const [valueKey, otherKey] =
    type === "ReplaceFullPath"
      ? ["replaceFullPath", "replacePrefixMatch"]
      : ["replacePrefixMatch", "replaceFullPath"];
  if (value === undefined)
    fail("invalid_value", `${at}.${valueKey} is required when type is ${type}`);
  if (other !== undefined) {
    fail("invalid_value", `${at}.${otherKey} must not be set when type is ${type}`);
  }
  return create(PathModifierSchema, {
    type:
      type === "ReplaceFullPath"
        ? PathModifierType.REPLACE_FULL_PATH
        : PathModifierType.REPLACE_PREFIX_MATCH,
    value,
  });
}

function readPreciseHostname(config: JsonObject, path: string): string | undefined {
  const hostname = optionalString(config, "hostname", path);
  if (hostname !== undefined && !isDnsSubdomain(hostname)) {
    fail("invalid_value", `${path}.hostname ${quote(hostname)} is not a valid hostname`);
  }
  return hostname;
}

function readRedirect(config: JsonObject, path: string) {
  checkFields(config, path, {
    supported: ["scheme", "hostname", "path", "port", "statusCode"],
  });
  const statusCode = optionalInteger(config, "statusCode", path, { min: 0, max: 999 });
  if (statusCode !== undefined && !REDIRECT_STATUS_CODES.includes(statusCode)) {
    fail(
      "invalid_value",
      `${path}.statusCode is ${statusCode}; it must be one of ${REDIRECT_STATUS_CODES.join(", ")}`,
    );
  }
  return create(RequestRedirectSchema, {
    scheme: optionalEnum(config, "scheme", path, ["http", "https"]),
    hostname: readPreciseHostname(config, path),
    path: readPathModifier(config, path),
    port: optionalInteger(config, "port", path, { min: 1, max: 65535 }),
    statusCode: statusCode ?? DEFAULT_REDIRECT_STATUS,
  });
}

function readRewrite(config: JsonObject, path: string) {
  checkFields(config, path, { supported: ["hostname", "path"] });
  return create(UrlRewriteSchema, {
    hostname: readPreciseHostname(config, path),
    path: readPathModifier(config, path),
  });
}

function readMirror(config: JsonObject, path: string, ctx: Context): RequestMirror | undefined {
  checkFields(config, path, { supported: ["backendRef", "percent", "fraction"] });
  const percent = optionalInteger(config, "percent", path, { min: 0, max: 100 });
  const object = optionalObject(config, "fraction", path, {
    supported: ["numerator", "denominator"],
  });
  if (percent !== undefined && object !== undefined) {
    fail("invalid_value", `${path} must not set both percent and fraction`);
  }
  let fraction = percent === undefined ? undefined : { numerator: percent, denominator: 100 };
  if (object !== undefined) {
    const at = `${path}.fraction`;
    const numerator = optionalInteger(object, "numerator", at, { min: 0, max: INT32_MAX });
    if (numerator === undefined) fail("invalid_object", `${at}.numerator is required`);
    const denominator =
      optionalInteger(object, "denominator", at, { min: 1, max: INT32_MAX }) ?? 100;
    if (numerator > denominator) {
      fail("invalid_value", `${at}.numerator must not be greater than its denominator`);
    }
    fraction = { numerator, denominator };
  }
  const refPath = `${path}.backendRef`;
  const ref = asObject(field(config, "backendRef"), refPath);
  checkFields(ref, refPath, { supported: ["group", "kind", "name", "namespace", "port"] });
  const backend = resolveBackendRef(ref, refPath, { ...ctx, from: ctx.dialect.type });
  if (!isBackend(backend)) {
    ctx.warnings.push({
      reason: backend.reason,
      message: `${refPath} ${backend.why}; the mirror is not applied`,
    });
    return undefined;
  }
  return create(RequestMirrorSchema, {
    backend,
    fraction: fraction === undefined ? undefined : create(FractionSchema, fraction),
  });
}

function readExtensionRef(config: JsonObject, path: string) {
  checkFields(config, path, { supported: ["group", "kind", "name"] });
  const group = optionalString(config, "group", path, { max: 253 });
  if (group === undefined) fail("invalid_object", `${path}.group is required`);
  return create(ExtensionRefSchema, {
    group,
    kind: requiredString(config, "kind", path, { min: 1, max: 63 }),
    name: requiredString(config, "name", path, { min: 1, max: 253 }),
  });
}

function readCors(config: JsonObject, path: string): Cors {
  checkFields(config, path, {
    supported: [
      "allowOrigins",
      "allowCredentials",
      "allowMethods",
      "allowHeaders",
      "exposeHeaders",
      "maxAge",
    ],
  });
  const allowOrigins = optionalStringList(config, "allowOrigins", path, MAX.cors);
  allowOrigins.forEach((origin, i) => {
    if (!isCorsOrigin(origin)) {
      fail("invalid_value", `${path}.allowOrigins[${i}] ${quote(origin)} is not a valid origin`);
    }
  });
  const allowMethods = optionalStringList(config, "allowMethods", path, 9);
  allowMethods.forEach((method, i) => {
    if (method !== "*" && !HTTP_METHODS.includes(method)) {
      fail("invalid_value", `${path}.allowMethods[${i}] ${quote(method)} is not an HTTP method`);
    }
  });
  const headerList = (key: string) => {
    const names = optionalStringList(config, key, path, MAX.cors);
    names.forEach((name, i) => {
      if (!isHeaderName(name)) {
        fail("invalid_value", `${path}.${key}[${i}] ${quote(name)} is not a valid header name`);
      }
    });
    return names;
  };
  const cors = create(CorsSchema, {
    allowOrigins,
    allowCredentials: optionalBoolean(config, "allowCredentials", path) ?? false,
    allowMethods,
    allowHeaders: headerList("allowHeaders"),
    exposeHeaders: headerList("exposeHeaders"),
    maxAgeSeconds:
      optionalInteger(config, "maxAge", path, { min: 1, max: INT32_MAX }) ?? DEFAULT_CORS_MAX_AGE,
  });
  for (const key of ["allowOrigins", "allowMethods", "allowHeaders"] as const) {
    const list = cors[key];
    if (list.includes("*") && list.length > 1) {
      fail("invalid_value", `${path}.${key} must not contain "*" alongside other values`);
    }
  }
  return cors;
}

function readBackend(value: unknown, path: string, ctx: Context): Backend {
  const ref = asObject(value, path);
  checkFields(ref, path, {
    supported: ["group", "kind", "name", "namespace", "port", "weight", "filters"],
  });
  const weight =
    optionalInteger(ref, "weight", path, {
      min: 0,
      max: MAX_WEIGHT,
      reason: "weight_out_of_range",
    }) ?? 1;
  const filters = readFilters(ref, path, ctx);
  const backend = resolveBackendRef(ref, path, { ...ctx, from: ctx.dialect.type });
  if (!isBackend(backend)) {
    ctx.warnings.push({
      reason: backend.reason,
      message: `${path} ${backend.why}; ${ctx.dialect === GRPC ? "calls routed to it get UNAVAILABLE" : "requests routed to it get a 500"}`,
    });
    // An unresolved backend keeps its share of the traffic: see convertRoute.
    // TODO(proto-unresolved-backend): the contract has no field saying a backend is
    // unresolved, so an empty `service` means it. If Backend gains one (proposed:
    // `string unresolved_reason = 6`), set it here and keep the service name.
    return create(BackendSchema, { weight });
  }
  backend.weight = weight;
  backend.filters = filters;
  return backend;
}

/** Why a backend reference cannot be resolved: a reason and a phrase for the message. */
export interface Unresolved {
  readonly reason: string;
  readonly why: string;
}

/** Whether {@link resolveBackendRef} resolved the reference. */
export function isBackend(value: Backend | Unresolved): value is Backend {
  return "$typeName" in value;
}

/** Where a backend reference is resolved, and what refers (for ReferenceGrants). */
export interface BackendRefContext {
  /** The objects. */
  readonly index: ObjectIndex;
  /** The namespace of the referring object (the default of the reference's). */
  readonly namespace: string;
  /** Mesh semantics: no ReferenceGrant needed across namespaces. */
  readonly mesh: boolean;
  /** The type of the referring object, as a ReferenceGrant's `from` names it. */
  readonly from: ObjectType;
}

/**
 * Resolves a BackendObjectReference to a Backend (weight 0, no filters), or
 * says why it cannot be resolved. Throws for references the API would refuse.
 */
export function resolveBackendRef(
  ref: JsonObject,
  path: string,
  ctx: BackendRefContext,
): Backend | Unresolved {
  const group = optionalString(ref, "group", path, { max: 253 }) ?? "";
  const kind = optionalString(ref, "kind", path, { min: 1, max: 63 }) ?? "Service";
  const name = requiredString(ref, "name", path, { min: 1, max: 253 });
  const namespace = optionalString(ref, "namespace", path, { min: 1, max: 63 }) ?? ctx.namespace;
  if (!isDns1123Label(namespace)) {
    fail("invalid_value", `${path}.namespace ${quote(namespace)} is not a DNS-1123 label`);
  }
  const port = optionalInteger(ref, "port", path, { min: 1, max: 65535 });
  const isService = group === SERVICE.group && kind === SERVICE.kind;
  if (isService && port === undefined) {
    fail("invalid_value", `${path}.port is required for a Service backend`);
  }
  const target = `${namespace}/${name}`;
  if (!isService) {
    return {
      reason: "unsupported_backend",
      why: `refers to ${groupKind(group, kind)} ${target}, which is not a Service`,
    };
  }
  if (
    namespace !== ctx.namespace &&
    !ctx.mesh &&
    !ctx.index.isReferenceGranted(ctx.from, ctx.namespace, SERVICE, { namespace, name })
  ) {
    return {
      reason: "ref_not_permitted",
      why: `refers to Service ${target} in another namespace, and no ReferenceGrant in ${namespace} permits it`,
    };
  }
  const service = ctx.index.service(namespace, name);
  if (service === undefined) {
    return {
      reason: "backend_not_found",
      why: `refers to Service ${target}, which does not exist`,
    };
  }
  if (service.externalName) {
    return {
      reason: "unsupported_backend",
      why: `refers to Service ${target}, which is of type ExternalName`,
    };
  }
  const servicePort = service.ports.find((p) => p.port === port);
  if (servicePort === undefined) {
    return {
      reason: "backend_not_found",
      why: `refers to port ${port} of Service ${target}, which has no such port`,
    };
  }
  return create(BackendSchema, {
    service: service.key,
    port,
    weight: 0,
    appProtocol: servicePort.appProtocol,
  });
}
