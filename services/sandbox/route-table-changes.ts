/**
 * One line per service whose entry in an agent's route table changed: what
 * the sandbox prints while it runs, so an edit under `examples/` is seen
 * reaching the agents. Pure.
 */
import type { RouteTable, RouteTableEntry } from "../common/route-merge.js";

function describeEntry(entry: RouteTableEntry): string {
  const from =
    entry.source === "local" ? `local (${entry.origin})` : `imported from ${entry.origin}`;
  const routes = entry.projection.routes.length;
  return `${from}, version ${entry.version}, ${routes} route${routes === 1 ? "" : "s"}`;
}

/**
 * Describes how `next` differs from `previous` (undefined: an empty table),
 * one line per added, changed or removed service, sorted by service.
 */
export function describeRouteTableChanges(
  previous: RouteTable | undefined,
  next: RouteTable,
): string[] {
  const before = new Map((previous?.services ?? []).map((e) => [e.service, e]));
  const after = new Map(next.services.map((e) => [e.service, e]));
  const services = [...new Set([...before.keys(), ...after.keys()])].sort();
  const lines: string[] = [];
  for (const service of services) {
    const old = before.get(service);
    const now = after.get(service);
    if (now === undefined) {
      lines.push(`${service}: removed (no config: requests go to the service itself)`);
    } else if (old === undefined) {
      lines.push(`${service}: added, ${describeEntry(now)}`);
    } else if (old.version !== now.version || old.source !== now.source) {
      lines.push(`${service}: ${describeEntry(now)} (was ${old.version})`);
    }
  }
  return lines;
}
