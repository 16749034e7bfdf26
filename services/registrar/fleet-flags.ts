/**
 * The registrar's fleet-status flags: which replica it is (`--replica-id`),
 * how often it publishes its import status (`--status-interval`,
 * `--status-heartbeat`) and where it reads its cluster's local (class-2)
 * routes (`--local-source`, like the agent's): their `parseArgs` options,
 * their `--help` lines and their parsing into checked values.
 */
import { hostname } from "node:os";
import { checkReplicaName, replicaNameFromHost } from "../common/status-layout.js";
import { parseDurationFlag } from "../process/flag-values.js";
import { UsageError } from "../process/usage-error.js";

/** Where the registrar reads its cluster's local routes from. */
export type LocalSourceConfig =
  | { readonly kind: "dir"; readonly path: string }
  | { readonly kind: "kubernetes" };

/** The values the fleet flags set. */
export interface FleetFlags {
  /** `--replica-id`: this replica's name in its cluster's published status. */
  readonly replicaId: string;
  /** `--status-interval`: at most one status write round per this many milliseconds. */
  readonly statusIntervalMs: number;
  /** `--status-heartbeat`: the header is rewritten at least this often, in milliseconds. */
  readonly statusHeartbeatMs: number;
  /** `--local-source`: the cluster's local routes, whose digests it publishes; undefined: none. */
  readonly localSource: LocalSourceConfig | undefined;
}

/** The `parseArgs` options of the fleet flags, with their defaults. */
export const FLEET_FLAG_OPTIONS = {
  "replica-id": { type: "string" },
  "status-interval": { type: "string", default: "1s" },
  "status-heartbeat": { type: "string", default: "15s" },
  "local-source": { type: "string" },
} as const;

/** The `--help` lines of the fleet flags. */
export const FLEET_FLAGS_USAGE = `Fleet status (published under <prefix>/clusters/<cluster>/status/<replica>/):
  --replica-id NAME         this replica's name in its cluster, 1 to 63 of [a-z0-9.-]
                            (default: the host name, lowercased)
  --status-interval DURATION
                            at most one import status write round per interval (default 1s)
  --status-heartbeat DURATION
                            rewrite the replica's header at least this often; readers call
                            it stale after three (default 15s)
  --local-source SOURCE     this cluster's local class-2 routes, dir:PATH or kubernetes
                            (with --kubeconfig): their digests are published for drift
                            (default: none)`;

/**
 * Parses the fleet flags. Throws a {@link UsageError} naming the flag when
 * one is not valid.
 */
export function parseFleetFlags(values: Record<string, unknown>): FleetFlags {
  const given = values["replica-id"] as string | undefined;
  const replicaId = given ?? replicaNameFromHost(hostname());
  const problem = checkReplicaName(replicaId);
  if (problem !== undefined) throw new UsageError(`--replica-id: ${problem}`);
  const statusIntervalMs = parseDurationFlag(
    "status-interval",
    values["status-interval"] as string,
  );
  if (statusIntervalMs < 100) throw new UsageError("--status-interval must be at least 100ms");
  const statusHeartbeatMs = parseDurationFlag(
    "status-heartbeat",
    values["status-heartbeat"] as string,
  );
  if (statusHeartbeatMs < 1_000 || statusHeartbeatMs < statusIntervalMs) {
    throw new UsageError("--status-heartbeat must be at least 1s and at least --status-interval");
  }
  return {
    replicaId,
    statusIntervalMs,
    statusHeartbeatMs,
    localSource: parseLocalSource(values["local-source"] as string | undefined),
  };
}

/** Parses `dir:PATH` or `kubernetes`. */
function parseLocalSource(value: string | undefined): LocalSourceConfig | undefined {
  if (value === undefined) return undefined;
  if (value === "kubernetes") return { kind: "kubernetes" };
  if (value.startsWith("dir:") && value.length > 4) return { kind: "dir", path: value.slice(4) };
  throw new UsageError(`--local-source ${JSON.stringify(value)} must be dir:PATH or kubernetes`);
}

/**
 * Checks `--kubeconfig`: only with `--export-source kubernetes` or
 * `--local-source kubernetes` (a {@link UsageError} otherwise). Returns it.
 */
export function kubeconfigFlag(
  values: Record<string, unknown>,
  exportKind: string | undefined,
  localKind: string | undefined,
): string | undefined {
  const kubeconfig = values.kubeconfig as string | undefined;
  if (kubeconfig !== undefined && exportKind !== "kubernetes" && localKind !== "kubernetes") {
    throw new UsageError(
      "--kubeconfig is only used with --export-source kubernetes or --local-source kubernetes",
    );
  }
  return kubeconfig;
}
