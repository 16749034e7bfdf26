/**
 * What the sandbox prints once it runs: where everything is, and
 * ready-to-paste commands against it (`curl`, `npm run aetherctl`,
 * `npx buf curl`). Pure.
 */
import { relative } from "node:path";
import type { SandboxInfo } from "./sandbox.js";

/** The last line of the banner: everything is up. */
export const READY_LINE = "ready: Ctrl-C (or SIGTERM) stops everything";

/** A path relative to `cwd` when it is under it, else as is. */
function shortPath(path: string, cwd: string): string {
  const rel = relative(cwd, path);
  return rel === "" || rel.startsWith("..") ? path : rel;
}

function table(rows: readonly (readonly string[])[]): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    `  ${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join("  ")}`.trimEnd(),
  );
}

/**
 * The banner's lines for a running sandbox (`cwd` shortens paths). The
 * aetherctl and buf commands point at the first spoke's registrar, the view
 * its agents get; the `explain` examples are real requests of the mesh.
 */
export function formatBanner(info: SandboxInfo, cwd: string): string[] {
  const hub = info.registrars.find((r) => r.role === "hub");
  const spoke = info.registrars.find((r) => r.role === "spoke");
  const local = info.agents.find((a) => a.localRoutes !== undefined);
  const where =
    info.store === "memory"
      ? "on one embedded store (no etcd)"
      : `on etcd at ${info.etcdEndpoints.join(",")}`;
  const lines = [
    `aether sandbox: ${info.registrars.length} registrars and ${info.agents.length} agents in this process, ${where}`,
    "",
    "registrars (ConfigService: Connect, gRPC, gRPC-Web; /readyz, /metrics)",
    ...table(
      info.registrars.map((r) => [
        r.cluster,
        r.url,
        r.role === "hub"
          ? `control cluster, exports ${shortPath(info.meshDir, cwd)}`
          : `spoke, imports from ${hub?.cluster ?? "the hub"}`,
      ]),
    ),
    "",
    "agents (GET /routes: the merged route table their data plane applies)",
    ...table(
      info.agents.map((a) => [
        a.cluster,
        `${a.url}/routes`,
        `follows ${a.registrar}, calls ${a.dependencies.join(", ")}`,
      ]),
    ),
  ];
  for (const agent of info.agents) {
    if (agent.localRoutes !== undefined) {
      lines.push(
        `  ${agent.cluster}'s local class-2 routes win over the hub's: ${shortPath(agent.localRoutes, cwd)}`,
      );
    }
    if (agent.missing.length > 0) {
      lines.push(
        `  note: ${agent.cluster} has no config yet for ${agent.missing.join(", ")} (not exported by the hub?)`,
      );
    }
  }
  lines.push(
    `  state: ${info.stateDir} (caches, <cluster>/routes.json${info.stateIsTemporary ? "; removed at exit" : ""})`,
  );
  if (spoke !== undefined) {
    const ctl = `npm run aetherctl -- --registrar ${spoke.url}`;
    const buf = "npx buf curl --protocol grpc --http2-prior-knowledge";
    const method = `${spoke.url}/aether.registry.v1.ConfigService`;
    lines.push(
      "",
      "try",
      ...(local === undefined ? [] : [`  curl -s ${local.url}/routes`]),
      `  ${ctl} list`,
      `  ${ctl} status`,
      `  ${ctl} explain --from-namespace web GET http://checkout.shop:8080/cart`,
      `  ${ctl} explain --from-namespace shop --random 0.95 GET http://checkout.shop:8080/`,
      `  ${ctl} explain --from-namespace web GET http://cart.shop:8080/basket/42`,
      `  ${ctl} explain --from-namespace web --grpc payments.v1.Ledger/GetBalance http://ledger.payments:9090 -H 'x-ledger-shard: eu'`,
      `  ${ctl} watch`,
      `  ${buf} --list-methods ${spoke.url}`,
      `  ${buf} -d '{"services":["shop/checkout"]}' ${method}/ListAllConfig`,
    );
  }
  lines.push(
    "",
    `edit a manifest under ${shortPath(info.meshDir, cwd)} (say the 90/10 weights in shop/checkout-routes.yaml):`,
    "the agents' route tables change within a second, and the changes are printed below.",
    READY_LINE,
  );
  return lines;
}
