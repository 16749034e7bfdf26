/**
 * The conversion of one HTTPFilter object (`mesh.aether.dev/v1alpha1`, the
 * proxy-extension escape hatch) into a contract `HttpFilter` without its
 * targets: metadata, phase, priority and its one extension, every field
 * validated as the CRD in deploy/crds does, and an extension's backendRef
 * resolved to a Service port. Invalid input throws a FieldError (the
 * projector turns it into a rejection). Its targetRefs are read by
 * {@link readFilterTargets} and attached by `projector-http-filter-attach.ts`.
 * Pure, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import {
  type Backend,
  ExtensionFailureMode,
  ExternalAuthorizationExtensionSchema,
  ExternalProcessorExtensionSchema,
  HeaderMutationExtensionSchema,
  type HttpFilter,
  HttpFilterPhase,
  HttpFilterSchema,
  LuaExtensionSchema,
  WasmExtensionSchema,
  WasmPullPolicy,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { apiGroupOf, type KubeObject } from "./kube-object.js";
import {
  asObject,
  checkFields,
  fail,
  field,
  groupKind,
  isJsonObject,
  type JsonObject,
  optionalEnum,
  optionalInteger,
  optionalList,
  quote,
  readTargetRef,
  requiredString,
} from "./projector-fields.js";
import { canonicalJson, HTTP_FILTER, type ObjectIndex, SERVICE } from "./projector-index.js";
import {
  isBackend,
  readCreationTime,
  readHeaderModifier,
  readIdentity,
  resolveBackendRef,
} from "./projector-route.js";
import { readDurationField } from "./projector-rule-policy.js";

/** The extension fields of an HTTPFilter spec; exactly one must be set. */
const FILTER_EXTENSIONS = ["lua", "wasm", "extProc", "extAuthz", "headerMutation"] as const;

/** The most targetRefs one HTTPFilter may have (as the CRD says). */
const MAX_TARGETS = 16;
/** The longest Lua source and Wasm plugin configuration (canonical JSON) accepted. */
const MAX_TEXT = 65_536;
const INT32 = { min: -2_147_483_648, max: 2_147_483_647 };
const SHA256 = /^[a-f0-9]{64}$/;

const PHASES: Readonly<Record<string, HttpFilterPhase>> = {
  AuthN: HttpFilterPhase.AUTHN,
  AuthZ: HttpFilterPhase.AUTHZ,
  Stats: HttpFilterPhase.STATS,
  Default: HttpFilterPhase.DEFAULT,
};

/** One targetRef of an HTTPFilter, as read (validated by {@link readFilterTargets}). */
export interface FilterTarget {
  /** Its index in `spec.targetRefs`. */
  readonly index: number;
  /** The Service's name (in the filter's namespace). */
  readonly name: string;
  /** The port name it names, when it names one. */
  readonly sectionName: string | undefined;
}

/**
 * Reads `spec.targetRefs` of an HTTPFilter leniently: the entries with group
 * `""`, kind `Service` and a string name. For deciding which services a
 * filter concerns before it is converted; {@link convertHttpFilter} rejects
 * the malformed entries this skips.
 */
export function readFilterTargets(object: KubeObject): FilterTarget[] {
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const list = field(spec, "targetRefs");
  const targets: FilterTarget[] = [];
  (Array.isArray(list) ? list : []).forEach((raw: unknown, index) => {
    if (!isJsonObject(raw) || field(raw, "group") !== "" || field(raw, "kind") !== "Service")
      return;
    const name = field(raw, "name");
    const sectionName = field(raw, "sectionName");
    if (typeof name !== "string") return;
    targets.push({
      index,
      name,
      sectionName: typeof sectionName === "string" ? sectionName : undefined,
    });
  });
  return targets;
}

/**
 * Converts one HTTPFilter object into an `HttpFilter` with no targets.
 * Throws a FieldError for anything the CRD would refuse (`invalid_object`,
 * `invalid_value`, `invalid_duration`, `unsupported_field`), for a
 * targetRef to anything but a Service (`invalid_kind`), for no or several
 * extensions (`invalid_filter`), and for an extension backendRef
 * that names no Service port (`backend_not_found`), an ExternalName Service
 * (`unsupported_backend`) or, without `mesh`, a Service in another namespace
 * no ReferenceGrant permits (`ref_not_permitted`): an extension that cannot
 * be reached would fail every request, so the filter is refused instead.
 */
export function convertHttpFilter(
  object: KubeObject,
  index: ObjectIndex,
  mesh: boolean,
): HttpFilter {
  asObject(object, "the filter");
  const group = apiGroupOf(typeof object.apiVersion === "string" ? object.apiVersion : undefined);
  if (object.kind !== HTTP_FILTER.kind || group !== HTTP_FILTER.group) {
    fail("invalid_object", `the object is not an HTTPFilter of ${HTTP_FILTER.group}`);
  }
  const { metadata, name, namespace } = readIdentity(object);
  const spec = asObject(object.spec, "spec");
  checkFields(spec, "spec", {
    supported: ["targetRefs", "phase", "priority", ...FILTER_EXTENSIONS],
  });
  checkTargetRefs(spec);
  const set = FILTER_EXTENSIONS.filter((key) => field(spec, key) !== undefined);
  if (set.length !== 1) {
    fail(
      set.length === 0 ? "invalid_object" : "invalid_filter",
      `spec must set exactly one of ${FILTER_EXTENSIONS.join(", ")}${set.length === 0 ? "" : `, not ${set.join(" and ")}`}`,
    );
  }
  const phase = optionalEnum(spec, "phase", "spec", Object.keys(PHASES)) ?? "Default";
  return create(HttpFilterSchema, {
    namespace,
    name,
    creationTime: readCreationTime(metadata),
    phase: PHASES[phase],
    priority: optionalInteger(spec, "priority", "spec", INT32) ?? 0,
    targets: [],
    extension: readExtension(spec, set[0] as string, { index, namespace, mesh }),
  });
}

function checkTargetRefs(spec: JsonObject): void {
  optionalList(spec, "targetRefs", "spec", MAX_TARGETS).forEach((raw, i) => {
    const at = `spec.targetRefs[${i}]`;
    const { group, kind } = readTargetRef(raw, at, i);
    if (group !== SERVICE.group || kind !== SERVICE.kind) {
      fail(
        "invalid_kind",
        `${at} targets a ${groupKind(group, kind)}; an HTTPFilter targets only Services`,
      );
    }
  });
}

/** Where an extension's references are resolved. */
interface ExtensionContext {
  readonly index: ObjectIndex;
  readonly namespace: string;
  readonly mesh: boolean;
}

function readExtension(
  spec: JsonObject,
  key: string,
  ctx: ExtensionContext,
): HttpFilter["extension"] {
  const at = `spec.${key}`;
  const config = asObject(field(spec, key), at);
  switch (key) {
    case "lua": {
      checkFields(config, at, { supported: ["source"] });
      const source = requiredString(config, "source", at, { min: 1, max: MAX_TEXT });
      return { case: "lua", value: create(LuaExtensionSchema, { source }) };
    }
    case "wasm":
      return { case: "wasm", value: readWasm(config, at) };
    case "extProc":
      return {
        case: "extProc",
        value: create(ExternalProcessorExtensionSchema, readExternal(config, at, ctx)),
      };
    case "extAuthz":
      return {
        case: "extAuthz",
        value: create(ExternalAuthorizationExtensionSchema, readExternal(config, at, ctx)),
      };
    default: {
      checkFields(config, at, { supported: ["request", "response"] });
      const modifier = (side: string) => {
        const value = field(config, side);
        return value === undefined
          ? undefined
          : readHeaderModifier(asObject(value, `${at}.${side}`), `${at}.${side}`);
      };
      return {
        case: "headerMutation",
        value: create(HeaderMutationExtensionSchema, {
          request: modifier("request"),
          response: modifier("response"),
        }),
      };
    }
  }
}

function readWasm(config: JsonObject, at: string) {
  checkFields(config, at, { supported: ["url", "sha256", "pluginConfig", "pullPolicy"] });
  const url = requiredString(config, "url", at, { min: 1, max: 2048 });
  const oci = url.startsWith("oci://");
  if (!(oci || url.startsWith("https://")) || url.length <= "oci://".length + 1) {
    fail("invalid_value", `${at}.url ${quote(url)} is not an https:// URL or an oci:// image`);
  }
  const sha256 = requiredString(config, "sha256", at);
  if (!SHA256.test(sha256)) {
    fail("invalid_value", `${at}.sha256 ${quote(sha256)} is not 64 lower-case hex digits`);
  }
  const raw = field(config, "pluginConfig");
  const pluginConfig = raw === undefined ? undefined : asObject(raw, `${at}.pluginConfig`);
  const json = pluginConfig === undefined ? "" : canonicalJson(pluginConfig);
  if (json.length > MAX_TEXT) {
    fail(
      "invalid_value",
      `${at}.pluginConfig takes ${json.length} characters as JSON; at most ${MAX_TEXT}`,
    );
  }
  const pull = optionalEnum(config, "pullPolicy", at, ["IfNotPresent", "Always"]);
  if (pull !== undefined && !oci) {
    fail("invalid_value", `${at}.pullPolicy applies to an oci:// image only`);
  }
  return create(WasmExtensionSchema, {
    url,
    sha256,
    pluginConfigJson: json,
    pullPolicy:
      pull === undefined
        ? WasmPullPolicy.UNSPECIFIED
        : pull === "Always"
          ? WasmPullPolicy.ALWAYS
          : WasmPullPolicy.IF_NOT_PRESENT,
  });
}

function readExternal(config: JsonObject, at: string, ctx: ExtensionContext) {
  checkFields(config, at, { supported: ["backendRef", "timeout", "failureMode"] });
  const failure = optionalEnum(config, "failureMode", at, ["Deny", "Allow"]) ?? "Deny";
  return {
    backend: resolveExtensionBackend(config, `${at}.backendRef`, ctx),
    timeout: readDurationField(config, "timeout", at),
    failureMode: failure === "Allow" ? ExtensionFailureMode.ALLOW : ExtensionFailureMode.DENY,
  };
}

/** Resolves an extension's backendRef to a Service port, or throws why it cannot be. */
function resolveExtensionBackend(config: JsonObject, path: string, ctx: ExtensionContext): Backend {
  const ref = asObject(field(config, "backendRef"), path);
  checkFields(ref, path, { supported: ["group", "kind", "name", "namespace", "port"] });
  const backend = resolveBackendRef(ref, path, { ...ctx, from: HTTP_FILTER });
  if (!isBackend(backend)) fail(backend.reason, `${path} ${backend.why}`);
  return backend;
}
