/**
 * `aetherctl fleet`'s flags: `--service`, `--cluster` and `--state`
 * (repeatable filters) and `--limit`, checked here as the registrar checks
 * them (`services/common/fleet-request.ts`), so a bad filter is a usage
 * error (exit 2) rather than a failed call. Pure.
 */
import { FleetState } from "../../gen/aether/registry/v1/fleet_pb.js";
import { MAX_FLEET_LIMIT } from "../../services/common/fleet-request.js";
import { checkClusterName, checkRecordName } from "../../services/common/service-name.js";
import { UsageError } from "../../services/process/usage-error.js";

/** `aetherctl fleet`. */
export interface FleetCommand {
  /** The command's name. */
  readonly name: "fleet";
  /** Only these services; empty means all. */
  readonly services: readonly string[];
  /** Only these clusters; empty means all. */
  readonly clusters: readonly string[];
  /** Only services in one of these states; empty means any. */
  readonly states: readonly FleetState[];
  /** At most this many services; 0 lets the registrar choose (100). */
  readonly limit: number;
}

/** The `--state` values, as the table prints them. */
export const FLEET_STATE_NAMES: Readonly<Record<string, FleetState>> = {
  in_sync: FleetState.IN_SYNC,
  behind: FleetState.BEHIND,
  rejecting: FleetState.REJECTING,
  drifted: FleetState.DRIFTED,
  stale: FleetState.STALE,
};

/** The options of `fleet` for `node:util`'s parseArgs. */
export const FLEET_OPTIONS = {
  service: { type: "string", multiple: true },
  cluster: { type: "string", multiple: true },
  state: { type: "string", multiple: true },
  limit: { type: "string" },
} as const;

/** The body of `fleet --help` (the global flags follow it). */
export const FLEET_USAGE = `Usage: aetherctl fleet [--service NS/SVC]… [--cluster NAME]… [--state STATE]… [--limit N]

Prints the registrar's GetFleetStatus: what every cluster that publishes its
import status serves, read from the shared store. First one line per cluster:
CLUSTER STALE (yes when every registrar replica stopped reporting) REPLICAS,
AGENTS and SERVICES by state, BEHIND FOR (how long its oldest unserved current
version has waited) and LAST REPORT (how long ago it last published). Then one
line per service, worst first (stale, rejecting, behind, drifted, in sync;
then the larger skew; then the name): SERVICE ORIGIN VERSION (this registrar's
current one) STATE SKEW (versions and time the furthest fresh cluster is
behind) and a cell per cluster, "east:in_sync 3/3" (agents that applied the
served version of those reporting it), "west:behind -2v" (versions behind),
"west:drifted" (its local config differs from most clusters'), "west:stale";
rejections follow on indented lines with their reasons.
-o json prints the response in proto JSON (with default values).

Flags:
  --service NS/SVC  only this service (repeatable; @mesh is the mesh record)
  --cluster NAME    only this cluster (repeatable)
  --state STATE     only services in this state: in_sync, behind, rejecting,
                    drifted or stale (repeatable)
  --limit N         at most N services, 1 to ${MAX_FLEET_LIMIT} (default 100)
`;

/** Parses `fleet`'s flag values; throws a {@link UsageError} naming the bad flag. */
export function parseFleetCommand(
  values: Record<string, unknown>,
  positionals: readonly string[],
): FleetCommand {
  const list = (flag: string) => (values[flag] as string[] | undefined) ?? [];
  if (positionals.length > 0) {
    throw new UsageError(
      `fleet takes no arguments (got ${positionals.join(" ")}); use --service`,
      "fleet",
    );
  }
  const services = checkEach("--service", list("service"), checkRecordName);
  const clusters = checkEach("--cluster", list("cluster"), checkClusterName);
  const states = checkEach("--state", list("state"), (s) =>
    s in FLEET_STATE_NAMES
      ? undefined
      : `${JSON.stringify(s)} is not one of ${Object.keys(FLEET_STATE_NAMES).join(", ")}`,
  ).map((s) => FLEET_STATE_NAMES[s] as FleetState);
  const limitText = values.limit as string | undefined;
  let limit = 0;
  if (limitText !== undefined) {
    limit = /^\d{1,4}$/.test(limitText) ? Number(limitText) : Number.NaN;
    if (!(limit >= 1 && limit <= MAX_FLEET_LIMIT)) {
      throw new UsageError(
        `--limit ${JSON.stringify(limitText)} must be a number from 1 to ${MAX_FLEET_LIMIT}`,
        "fleet",
      );
    }
  }
  return { name: "fleet", services, clusters, states, limit };
}

/** Checks each value of a repeatable flag, and that none is given twice. */
function checkEach(
  flag: string,
  values: readonly string[],
  check: (value: string) => string | undefined,
): string[] {
  const seen = new Set<string>();
  for (const value of values) {
    const problem = check(value);
    if (problem !== undefined) throw new UsageError(`${flag}: ${problem}`, "fleet");
    if (seen.has(value)) throw new UsageError(`${flag} ${value} is given twice`, "fleet");
    seen.add(value);
  }
  return [...seen];
}
