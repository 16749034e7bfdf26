/**
 * Reads one MeshConfig (`mesh.aether.dev/v1alpha1`, aether's own kind,
 * cluster-scoped): an origin's mesh-wide defaults, in the spirit of Istio's
 * MeshConfig and DestinationRule and Linkerd's defaults. Its shape:
 *
 *     metadata: { name: default }
 *     spec:
 *       requestTimeout: 15s
 *       retry: { codes: [503], attempts: 2, backoff: 100ms }
 *       retryBudget: { percent: 20, minRetryConcurrency: 3 }
 *       outlierDetection:
 *         { consecutive5xxErrors: 5, interval: 10s, baseEjectionTime: 30s, maxEjectionPercent: 50 }
 *
 * `retry` is read exactly as an HTTPRoute rule's `retry` (codes 400 to 599,
 * sorted). A `retryBudget` or `outlierDetection` stanza gets the defaults of
 * Envoy and Istio for what it leaves out, so the projection says exactly what
 * applies. Invalid input throws a FieldError naming the field path. Pure, no
 * I/O.
 */
import { create } from "@bufbuild/protobuf";
import { type Duration, DurationSchema } from "@bufbuild/protobuf/wkt";
import {
  type MeshConfig,
  MeshConfigSchema,
  type OutlierDetection,
  OutlierDetectionSchema,
  type RetryBudget,
  RetryBudgetSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import {
  asObject,
  checkFields,
  fail,
  type JsonObject,
  optionalInteger,
  optionalObject,
} from "./projector-fields.js";
import { readDurationField, readRetry } from "./projector-rule-policy.js";

/** The name of the one MeshConfig that applies (see `projector-mesh-config.ts`). */
export const MESH_CONFIG_NAME = "default";

/**
 * What a `retryBudget` stanza (Envoy's default `minRetryConcurrency`) or an
 * `outlierDetection` stanza (Istio's DestinationRule defaults) leaves out.
 */
export const MESH_DEFAULTS = {
  minRetryConcurrency: 3,
  consecutive5xxErrors: 5,
  intervalSeconds: 10n,
  baseEjectionSeconds: 30n,
  maxEjectionPercent: 10,
} as const;

/** The largest count a field takes (int32, as Kubernetes integers). */
const MAX_COUNT = 2_147_483_647;

/**
 * Reads and validates `object`, a MeshConfig with a usable name, into the
 * contract's MeshConfig. Throws a FieldError with reason `invalid_object`
 * (wrong type, a `retryBudget` without `percent`), `unsupported_field` (an
 * unknown field), `invalid_duration` (a duration that is not GEP-2257) or
 * `invalid_value` (a percentage out of range, a retry code outside 400 to
 * 599 or repeated, a zero `interval` or `baseEjectionTime`).
 */
export function readMeshConfig(object: KubeObject): MeshConfig {
  const metadata = asObject(object.metadata, "metadata");
  const spec =
    object.spec === undefined || object.spec === null ? {} : asObject(object.spec, "spec");
  checkFields(spec, "spec", {
    supported: ["requestTimeout", "retry", "retryBudget", "outlierDetection"],
  });
  return create(MeshConfigSchema, {
    name: metadata.name as string,
    requestTimeout: readDurationField(spec, "requestTimeout", "spec"),
    retry: readRetry(spec, "spec"),
    retryBudget: readRetryBudget(spec),
    outlierDetection: readOutlierDetection(spec),
  });
}

function readRetryBudget(spec: JsonObject): RetryBudget | undefined {
  const budget = optionalObject(spec, "retryBudget", "spec", {
    supported: ["percent", "minRetryConcurrency"],
  });
  if (budget === undefined) return undefined;
  const at = "spec.retryBudget";
  const percent = optionalInteger(budget, "percent", at, { min: 1, max: 100 });
  if (percent === undefined) fail("invalid_object", `${at}.percent is required`);
  const min = optionalInteger(budget, "minRetryConcurrency", at, { min: 0, max: MAX_COUNT });
  return create(RetryBudgetSchema, {
    percent,
    minRetryConcurrency: min ?? MESH_DEFAULTS.minRetryConcurrency,
  });
}

function readOutlierDetection(spec: JsonObject): OutlierDetection | undefined {
  const outlier = optionalObject(spec, "outlierDetection", "spec", {
    supported: ["consecutive5xxErrors", "interval", "baseEjectionTime", "maxEjectionPercent"],
  });
  if (outlier === undefined) return undefined;
  const at = "spec.outlierDetection";
  const errors = optionalInteger(outlier, "consecutive5xxErrors", at, { min: 0, max: MAX_COUNT });
  const percent = optionalInteger(outlier, "maxEjectionPercent", at, { min: 0, max: 100 });
  return create(OutlierDetectionSchema, {
    consecutive5xxErrors: errors ?? MESH_DEFAULTS.consecutive5xxErrors,
    interval: positiveDuration(outlier, "interval", at, MESH_DEFAULTS.intervalSeconds),
    baseEjectionTime: positiveDuration(
      outlier,
      "baseEjectionTime",
      at,
      MESH_DEFAULTS.baseEjectionSeconds,
    ),
    maxEjectionPercent: percent ?? MESH_DEFAULTS.maxEjectionPercent,
  });
}

/** Reads a duration that must be longer than zero, `seconds` when absent. */
function positiveDuration(
  object: JsonObject,
  key: string,
  path: string,
  seconds: bigint,
): Duration {
  const duration = readDurationField(object, key, path) ?? create(DurationSchema, { seconds });
  if (duration.seconds === 0n && duration.nanos === 0) {
    fail("invalid_value", `${path}.${key} must be longer than 0s`);
  }
  return duration;
}
