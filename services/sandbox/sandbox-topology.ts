/**
 * The sandbox's topology, as data: a hub (the control cluster, exporting the
 * mesh under `examples/mesh/`) and two spokes, each with one agent whose
 * dependency set differs; `west` also has local class-2 routes. Pure.
 */

/** The hub's cluster name: the control cluster every spoke trusts. */
export const HUB_CLUSTER = "hub";

/** The directory under `--examples` the hub exports. */
export const MESH_DIR = "mesh";

/** A spoke cluster: a registrar that imports from the hub, and one agent. */
export interface SpokeSpec {
  /** The cluster name. */
  readonly cluster: string;
  /** The services its agent's workloads call (sorted). */
  readonly dependencies: readonly string[];
  /** The local (class-2) routes directory under `--examples`, or undefined for none. */
  readonly localRoutes: string | undefined;
  /**
   * The directory under `--examples` of the cluster's local class-2 config
   * its registrar reads (`--local-source`) for the fleet's drift; it may hold
   * none (east's), which the fleet then knows.
   */
  readonly localConfig: string;
}

/** The spokes, in port order. */
export const SPOKES: readonly SpokeSpec[] = [
  {
    cluster: "east",
    dependencies: ["payments/ledger", "shop/cart", "shop/checkout"],
    localRoutes: undefined,
    localConfig: "local/east",
  },
  {
    cluster: "west",
    dependencies: ["identity/users", "payments/ledger", "shop/checkout"],
    localRoutes: "local/west",
    localConfig: "local/west",
  },
];

/** The ports of the sandbox's listeners. */
export interface SandboxPorts {
  /** The hub registrar's port. */
  readonly hub: number;
  /** Each spoke registrar's port, by cluster. */
  readonly registrars: ReadonlyMap<string, number>;
  /** Each agent's port, by cluster. */
  readonly agents: ReadonlyMap<string, number>;
  /** Each registrar's admin port (plain HTTP `/healthz`, `/readyz`, `/metrics`), by cluster, the hub first. */
  readonly admin: ReadonlyMap<string, number>;
  /** The console's port (the dashboard server: the console and its ConfigService gateway to the hub). */
  readonly console: number;
}

/** How far below the base port the console listens: 8080 gives 7070, `aetherctl dashboard`'s default. */
export const CONSOLE_PORT_OFFSET = -1010;

/** The lowest non-zero base port: the console's port must be a port too. */
export const MIN_BASE_PORT = 1 - CONSOLE_PORT_OFFSET;

/**
 * The ports for a base port: the hub on `base`, the i-th spoke's registrar on
 * `base + 1 + i` and its agent on `base + 1001 + i` (8080, 8081, 8082, 9081,
 * 9082 by default); the registrars' admin ports 100 above their own (8180,
 * 8181, 8182); the console 1010 below the base (7070, `aetherctl dashboard`'s
 * default; a base of at least {@link MIN_BASE_PORT}). A base of 0 gives 0
 * everywhere: free ports.
 */
export function sandboxPorts(base: number): SandboxPorts {
  const at = (offset: number) => (base === 0 ? 0 : base + offset);
  return {
    hub: at(0),
    registrars: new Map(SPOKES.map((spoke, i) => [spoke.cluster, at(1 + i)])),
    agents: new Map(SPOKES.map((spoke, i) => [spoke.cluster, at(1001 + i)])),
    admin: new Map([HUB_CLUSTER, ...SPOKES.map((s) => s.cluster)].map((c, i) => [c, at(100 + i)])),
    console: at(CONSOLE_PORT_OFFSET),
  };
}
