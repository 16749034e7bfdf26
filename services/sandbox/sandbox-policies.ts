/**
 * The banner's lines on what the channel carries besides routes, as the
 * agents' route tables (`/routes`) hold it: for the first service of an
 * agent's table that has each, its HTTP filters, its backend TLS, a rule's
 * retry policy and its VirtualHost names; and the mesh defaults
 * (MeshConfig) when a table has them. One short line each, so a newcomer
 * sees where to look. Pure.
 */

import type {
  MeshConfig,
  RouteRetry,
  ServiceConfigProjection,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { durationMs } from "../common/evaluator-filters.js";
import type { RouteTable } from "../common/route-merge.js";

/** An agent's name and its route table at the end of the start. */
export interface AgentTable {
  /** The agent's cluster. */
  readonly cluster: string;
  /** Its route table; undefined when it had none yet. */
  readonly table: RouteTable | undefined;
}

/** A duration in milliseconds as `100ms` or `2.5s`. */
function shortDuration(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${ms / 1000}s`;
}

/** `codes 502,503,504, 2 attempts, backoff 100ms` (what a retry policy sets). */
function retrySummary(retry: RouteRetry): string {
  const backoff = durationMs(retry.backoff);
  return [
    retry.codes.length === 0 ? "connection errors" : `codes ${retry.codes.join(",")}`,
    retry.attempts === undefined ? "" : `${retry.attempts} attempts`,
    backoff === undefined ? "" : `backoff ${shortDuration(backoff)}`,
  ]
    .filter((part) => part !== "")
    .join(", ");
}

/** The retry line's value for a projection: its first rule with a retry policy, or "". */
function retryOfProjection(projection: ServiceConfigProjection): string {
  for (const route of projection.routes) {
    for (const [index, rule] of route.rules.entries()) {
      if (rule.retry === undefined) continue;
      const name = rule.name === "" ? `rule ${index}` : `rule ${rule.name}`;
      return `${route.namespace}/${route.name} ${name}: ${retrySummary(rule.retry)}`;
    }
  }
  return "";
}

/** What a projection carries of one kind, in a few words; "" when nothing. */
const KINDS: readonly [label: string, describe: (p: ServiceConfigProjection) => string][] = [
  [
    "http filters",
    (p) =>
      p.httpFilters
        .map((f) => `${f.namespace}/${f.name} (${f.extension.case ?? "?"}, priority ${f.priority})`)
        .join(", "),
  ],
  [
    "backend tls",
    (p) =>
      p.backendTls
        .map((t) => `SNI ${t.hostname} on ${t.port === 0 ? "every port" : `port ${t.port}`}`)
        .join(", "),
  ],
  ["retry", retryOfProjection],
  ["virtual hosts", (p) => p.virtualHosts.flatMap((v) => v.hostnames).join(", ")],
];

/** `request timeout 15s, retry codes 503, 2 attempts, retry budget 20%, outlier detection after 5 5xx`. */
function meshSummary(config: MeshConfig): string {
  const timeout = durationMs(config.requestTimeout);
  const outlier = config.outlierDetection;
  return [
    timeout === undefined ? "" : `request timeout ${shortDuration(timeout)}`,
    config.retry === undefined ? "" : `retry ${retrySummary(config.retry)}`,
    config.retryBudget === undefined ? "" : `retry budget ${config.retryBudget.percent}%`,
    outlier === undefined ? "" : `outlier detection after ${outlier.consecutive5xxErrors} 5xx`,
  ]
    .filter((part) => part !== "")
    .join(", ");
}

/**
 * The banner's policy lines: a heading, then for each kind the first
 * service (over the agents in order, each table sorted by service) that
 * carries it, `  retry          shop/checkout (east): …`; then the mesh
 * defaults of the first table that has some. A kind no table carries has no
 * line; no line at all gives no heading either.
 */
export function policyLines(agents: readonly AgentTable[]): string[] {
  const rows: [string, string][] = [];
  for (const [label, describe] of KINDS) {
    const found = agents
      .flatMap(({ cluster, table }) =>
        (table?.services ?? []).map((entry) => ({
          cluster,
          entry,
          text: describe(entry.projection),
        })),
      )
      .find(({ text }) => text !== "");
    if (found !== undefined) {
      rows.push([label, `${found.entry.service} (${found.cluster}): ${found.text}`]);
    }
  }
  const mesh = agents.find(({ table }) => table?.meshDefaults !== undefined);
  const defaults = mesh?.table?.meshDefaults;
  if (mesh !== undefined && defaults !== undefined) {
    rows.push([
      "mesh defaults",
      `${defaults.source === "local" ? "local" : defaults.origin}'s MeshConfig ${defaults.config.name} (${mesh.cluster}): ${meshSummary(defaults.config) || "sets nothing"}`,
    ]);
  }
  if (rows.length === 0) return [];
  const width = Math.max(...rows.map(([label]) => label.length));
  return [
    "policies on the channel, as the agents' /routes carry them (one example each)",
    ...rows.map(([label, text]) => `  ${label.padEnd(width)}  ${text}`),
  ];
}
