/**
 * What the sandbox prints once it runs: where everything is, what the agents'
 * route tables carry besides routes (`sandbox-policies.ts`), its mutual TLS
 * (trust domains, certificates, who is authorized), and ready-to-paste
 * commands against it (`sandbox-commands.ts`). Pure.
 */
import type { SandboxInfo } from "./sandbox.js";
import { sandboxCommands, shortPath } from "./sandbox-commands.js";
import { OPERATOR_ID, registrarIdOf, trustDomainOf } from "./sandbox-identities.js";
import { policyLines } from "./sandbox-policies.js";

/** The last line of the banner: everything is up. */
export const READY_LINE = "ready: Ctrl-C (or SIGTERM) stops everything";

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

/** The banner's lines on mutual TLS: trust domains, the PKI, who may call whom. */
function tlsLines(info: SandboxInfo, cwd: string): string[] {
  const pki = info.pki;
  if (pki === undefined) return [];
  const domains = info.registrars.map((r) => trustDomainOf(r.cluster)).join(", ");
  return [
    `mutual TLS (SPIFFE X.509-SVIDs): a CA per trust domain (${domains}); every registrar trusts all three`,
    `  certificates: ${shortPath(pki.dir, cwd)} (${pki.reused ? "reused from an earlier run" : "made now"}; kept for the next run)`,
    "  each registrar authorizes its cluster's agent, every registrar, and the operator",
    `  ${OPERATOR_ID} (${shortPath(pki.operator.cert, cwd)}: aetherctl, buf curl, curl)`,
    ...operatorEnvLines(info, cwd),
    `  agents check their registrar's ID, e.g. ${registrarIdOf(info.registrars[1]?.cluster ?? "east")}`,
  ];
}

/** The banner's lines on signatures: who signs, who verifies, where the keys are. */
function signingLines(info: SandboxInfo, cwd: string): string[] {
  const signing = info.signing;
  if (signing === undefined) return ["projections are not signed (--unsigned)"];
  return [
    `signed projections: the hub signs every projection with key ${signing.keyId} (Ed25519, ${shortPath(signing.keyFile, cwd)}, ${signing.reused ? "reused" : "made now"})`,
    `  every registrar and agent verifies with ${shortPath(signing.originKeysFile, cwd)} and refuses unsigned or forged projections (--require-signatures)`,
  ];
}

/** Where aetherctl's TLS defaults are (the operator's environment file), or why they are not. */
function operatorEnvLines(info: SandboxInfo, cwd: string): string[] {
  const env = info.operatorEnv;
  if (env === undefined) return [];
  const file = shortPath(env.file, cwd);
  return env.problem === undefined
    ? [`  ${file}: aetherctl's TLS defaults as the operator (paths only; written at every start)`]
    : [`  note: no ${file}, so aetherctl takes TLS flags: ${env.problem}`];
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
    `registrars (ConfigService: Connect, gRPC, gRPC-Web${info.pki === undefined ? "" : " over mutual TLS"}; admin: plain HTTP /readyz, /metrics)`,
    ...table(
      info.registrars.map((r) => [
        r.cluster,
        r.url,
        `admin ${r.adminUrl}`,
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
  lines.push(
    "",
    `console  ${info.console}  (the web UI: fleet, service, explain, live; calls the hub ${info.pki === undefined ? "in plaintext" : "as the operator"})`,
  );
  const policies = policyLines(info.agents);
  if (policies.length > 0) lines.push("", ...policies);
  if (info.pki !== undefined) lines.push("", ...tlsLines(info, cwd));
  lines.push("", ...signingLines(info, cwd));
  if (spoke !== undefined) {
    const commands = sandboxCommands(info, spoke, cwd);
    const ctl = commands.aetherctl;
    // The operator's environment file carries --origin-keys when there is one.
    const keysFlag =
      info.signing === undefined ||
      (info.operatorEnv !== undefined && info.operatorEnv.problem === undefined)
        ? ""
        : ` --origin-keys ${shortPath(info.signing.originKeysFile, cwd)}`;
    lines.push(
      "",
      "try",
      ...(local === undefined ? [] : [`  curl -s ${local.url}/routes`]),
      `  ${commands.readyz}`,
      ...(commands.source === undefined ? [] : [`  ${commands.source}`]),
      `  ${ctl} list${keysFlag}`,
      `  ${ctl} get shop/checkout${keysFlag}`,
      ...(info.agents.some((a) => a.table?.meshDefaults !== undefined)
        ? [`  ${ctl} get @mesh${keysFlag}`]
        : []),
      `  ${ctl} status`,
      `  ${ctl} fleet`,
      `  ${ctl} explain --from-namespace web GET http://checkout.shop:8080/cart`,
      `  ${ctl} explain --from-namespace shop --random 0.95 GET http://checkout.shop:8080/`,
      `  ${ctl} explain --from-namespace web GET http://cart.shop:8080/basket/42`,
      `  ${ctl} explain --from-namespace web --grpc payments.v1.Ledger/GetBalance http://ledger.payments:9090 -H 'x-ledger-shard: eu'`,
      `  ${ctl} watch`,
      ...commands.buf.map((command) => `  ${command}`),
      `  ${commands.curl}`,
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
