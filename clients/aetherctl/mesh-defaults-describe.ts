/**
 * The mesh defaults (an origin's MeshConfig, the `@mesh` record) in words:
 * `aetherctl get @mesh`'s header and lines, and what `aetherctl explain`
 * prints of the defaults that applied to a request (with their source).
 * Pure.
 */
import type {
  MeshConfig,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { durationMs, retryOf } from "../../services/common/evaluator-filters.js";
import type { Decision, DecisionMeshPolicies } from "../../services/common/evaluator-types.js";
import { describeRetry } from "./projection-tree.js";
import { describeSignature, type SignatureReport } from "./signature-report.js";
import { formatFields } from "./table-format.js";
import { formatAge, formatMillis } from "./time-format.js";

/** Describes a retry budget: `at most 20% of the requests in flight, at least 3 at once`. */
export function describeRetryBudget(budget: DecisionMeshPolicies["retryBudget"]): string {
  if (budget === undefined) return "";
  return `at most ${budget.percent}% of the requests in flight, at least ${budget.minRetryConcurrency} at once`;
}

/**
 * Describes outlier detection: `eject an endpoint after 5 consecutive 5xx
 * (or connection failures), checked every 10s, for 30s times its ejections,
 * at most 50% of the endpoints`; what is unset is the data plane's default.
 */
export function describeOutlierDetection(
  outlier: DecisionMeshPolicies["outlierDetection"],
): string {
  if (outlier === undefined) return "";
  const trigger =
    outlier.consecutive5xxErrors === 0
      ? "no ejection on errors (consecutive 5xx 0)"
      : `eject an endpoint after ${outlier.consecutive5xxErrors} consecutive 5xx (or connection failures)`;
  const every =
    outlier.intervalMs === undefined
      ? "default interval"
      : `checked every ${formatMillis(outlier.intervalMs)}`;
  const time =
    outlier.baseEjectionTimeMs === undefined
      ? "default ejection time"
      : `for ${formatMillis(outlier.baseEjectionTimeMs)} times its ejections`;
  return `${trigger}, ${every}, ${time}, at most ${outlier.maxEjectionPercent}% of the endpoints`;
}

/** The mesh defaults as `label: value` rows (unset ones left out). */
export function meshDefaultsFields(config: MeshConfig): [string, string][] {
  const timeout = durationMs(config.requestTimeout);
  const outlier = config.outlierDetection;
  const rows: [string, string][] = [
    ["request timeout", timeout === undefined ? "" : formatMillis(timeout)],
    ["retry", describeRetry(retryOf(config.retry))],
    ["retry budget", describeRetryBudget(config.retryBudget)],
    [
      "outlier detection",
      describeOutlierDetection(
        outlier === undefined
          ? undefined
          : {
              ...outlier,
              intervalMs: durationMs(outlier.interval),
              baseEjectionTimeMs: durationMs(outlier.baseEjectionTime),
            },
      ),
    ],
  ];
  return rows.filter(([, value]) => value !== "");
}

/**
 * Formats an origin's mesh record for `aetherctl get @mesh`: who exported
 * it, its signature and version, then the defaults it sets, for example:
 *
 * ```text
 * record:            @mesh (mesh-wide defaults, MeshConfig default)
 * origin:            hub
 * signed:            key 5f0c6e2b9a1d3c47 of hub (ed25519): verified
 * version:           2026-11-29T12:00:00.000000000Z (age 3d)
 * request timeout:   15s
 * retry:             on 503 and connection errors, at most 2 retries, backoff 25ms
 * ```
 *
 * A record without a MeshConfig says so. Returns the text with a final `\n`.
 */
export function formatMeshRecord(
  projection: ServiceConfigProjection,
  nowMs: number,
  signature: SignatureReport,
): string {
  const config = projection.meshConfig;
  const defaults = config === undefined ? [] : meshDefaultsFields(config);
  return formatFields([
    [
      "record",
      `${projection.service} (mesh-wide defaults${config === undefined ? ": none" : `, MeshConfig ${config.name}`})`,
    ],
    ["origin", projection.originCluster],
    ["signed", describeSignature(signature, projection.originCluster)],
    ["version", `${projection.version} (age ${formatAge(projection.version, nowMs)})`],
    ...(config !== undefined && defaults.length === 0
      ? [["defaults", "none set (the data plane's own apply)"] as [string, string]]
      : defaults),
  ]);
}

/** Where the mesh defaults an explanation used came from. */
export interface MeshDefaultsOrigin {
  /** The mesh record (its `meshConfig` set). */
  readonly record: ServiceConfigProjection;
  /** Where it was read: `effective view`, `origin NAME`, or the agent's `local, …`/`imported, …`. */
  readonly view: string;
}

/** `explain`'s `mesh defaults:` value: which record applied, and from where. */
export function describeMeshDefaultsOrigin(origin: MeshDefaultsOrigin | undefined): string {
  if (origin === undefined) return "";
  const { record } = origin;
  return `MeshConfig ${record.meshConfig?.name ?? ""} of origin ${record.originCluster}, version ${record.version} (${origin.view})`;
}

/**
 * `explain`'s `retry:` value: the retry policy in effect, marked `(mesh
 * default)` when the mesh defaults gave it (a rule's own is unmarked).
 */
export function describeRetryInEffect(decision: Decision): string {
  const text = describeRetry(decision.retry);
  return text === "" || decision.retrySource !== "mesh" ? text : `${text} (mesh default)`;
}

/**
 * `explain`'s rows for the mesh defaults a decision used: the request
 * timeout when it is the defaults' (a rule's own is on the `timeouts:` line),
 * which record the defaults came from, the retry budget and outlier
 * detection. Rows with nothing to say are empty (left out).
 */
export function meshDecisionFields(
  decision: Decision,
  origin: MeshDefaultsOrigin | undefined,
): [string, string][] {
  const timeout = decision.requestTimeout;
  const policies = decision.meshPolicies;
  const fromMesh = timeout?.source === "mesh";
  const used = fromMesh || decision.retrySource === "mesh" || policies !== undefined;
  return [
    ["request timeout", fromMesh ? `${formatMillis(timeout.ms)} (mesh default)` : ""],
    ["mesh defaults", used ? describeMeshDefaultsOrigin(origin) : ""],
    ["retry budget", describeRetryBudget(policies?.retryBudget)],
    ["outlier detection", describeOutlierDetection(policies?.outlierDetection)],
  ];
}
