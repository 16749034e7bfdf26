/**
 * The parts of a projection besides its routes, as sections of the Service
 * view's tree: the HTTP filters (HTTPFilter, in run order, with what each
 * runs), the backend TLS settings (never the certificates, only their
 * count), the VirtualHost names, and the mesh config (`@mesh`). Pure.
 */
import {
  type HttpFilter,
  HttpFilterPhase,
  type MeshConfig,
  type ServiceConfigProjection,
  WellKnownCaCertificates,
} from "../../../../../gen/aether/registry/v1/projection_pb.js";
import {
  backendName,
  durationLabel,
  headerChanges,
  parentName,
  retryLabel,
} from "./service-labels.js";
import { leaf, section, type TreeNode } from "./tree-node.js";

const PHASES: Readonly<Record<number, string>> = {
  [HttpFilterPhase.AUTHN]: "AuthN",
  [HttpFilterPhase.AUTHZ]: "AuthZ",
  [HttpFilterPhase.STATS]: "Stats",
  [HttpFilterPhase.DEFAULT]: "Default",
};

/** What an HTTPFilter runs: `lua (12 lines)`, `wasm https://…`, `ext_authz shop/auth:9000`, …. */
export function extensionLabel(filter: HttpFilter): string {
  const e = filter.extension;
  switch (e.case) {
    case "lua":
      return `lua (${e.value.source.split("\n").length} lines)`;
    case "wasm":
      return `wasm ${e.value.url}`;
    case "extProc":
      return `ext_proc ${e.value.backend === undefined ? "(none)" : backendName(e.value.backend)}`;
    case "extAuthz":
      return `ext_authz ${e.value.backend === undefined ? "(none)" : backendName(e.value.backend)}`;
    case "headerMutation":
      return `header mutation: request ${headerChanges(e.value.request)}; response ${headerChanges(e.value.response)}`;
    default:
      return "nothing (no extension)";
  }
}

function filterNode(filter: HttpFilter, i: number): TreeNode {
  const phase = PHASES[filter.phase] ?? "unspecified";
  return {
    id: `filters/${i}`,
    kind: "filter",
    label: `${i + 1}. HTTPFilter ${filter.namespace}/${filter.name}`,
    detail: `${phase}, priority ${filter.priority}`,
    children: [
      leaf(
        `filters/${i}/targets`,
        "item",
        `targets ${filter.targets.map(parentName).join(", ") || "none"}`,
      ),
      leaf(`filters/${i}/runs`, "item", `runs ${extensionLabel(filter)}`),
    ],
  };
}

function tlsNodes(projection: ServiceConfigProjection): TreeNode[] {
  return projection.backendTls.map((tls, i) => {
    const port =
      tls.port === 0
        ? "every port"
        : `port ${tls.port}${tls.sectionName === "" ? "" : ` (${tls.sectionName})`}`;
    const count = tls.caCertificatesPem.split("-----BEGIN CERTIFICATE-----").length - 1;
    const trust =
      tls.wellKnownCaCertificates === WellKnownCaCertificates.SYSTEM
        ? "system CAs"
        : `${count} CA certificates`;
    const sans = tls.subjectAltNames.map((san) => san.name.value ?? "").join(", ");
    return leaf(
      `tls/${i}`,
      "item",
      `${port}: TLS to ${tls.hostname}`,
      [trust, sans === "" ? "" : `SANs ${sans}`, `policy ${tls.policyNamespace}/${tls.policyName}`]
        .filter((part) => part !== "")
        .join(" · "),
    );
  });
}

function meshNodes(mesh: MeshConfig | undefined): TreeNode[] {
  if (mesh === undefined) return [];
  const out = [leaf("mesh/name", "item", `name ${mesh.name || "(unnamed)"}`)];
  if (mesh.requestTimeout !== undefined) {
    out.push(
      leaf("mesh/timeout", "policy", `request timeout ${durationLabel(mesh.requestTimeout)}`),
    );
  }
  const retry = retryLabel(mesh.retry);
  if (retry !== "") out.push(leaf("mesh/retry", "policy", `retry: ${retry}`));
  const budget = mesh.retryBudget;
  if (budget !== undefined) {
    out.push(
      leaf(
        "mesh/budget",
        "policy",
        `retry budget ${budget.percent}%, min ${budget.minRetryConcurrency} at once`,
      ),
    );
  }
  const outlier = mesh.outlierDetection;
  if (outlier !== undefined) {
    out.push(
      leaf(
        "mesh/outlier",
        "policy",
        `outlier detection after ${outlier.consecutive5xxErrors} consecutive 5xx`,
        `every ${durationLabel(outlier.interval)}, ejected ${durationLabel(outlier.baseEjectionTime)}, at most ${outlier.maxEjectionPercent}%`,
      ),
    );
  }
  return out;
}

/** The sections after the routes; those the projection does not carry are left out. */
export function otherSections(projection: ServiceConfigProjection): (TreeNode | undefined)[] {
  const hosts = projection.virtualHosts.map((vh, i) =>
    leaf(
      `hosts/${i}`,
      "item",
      vh.hostnames.join(", "),
      `${vh.port === 0 ? "every port" : `port ${vh.port}`} · VirtualHost ${vh.namespace}/${vh.name}`,
    ),
  );
  return [
    section("filters", "HTTP filters", projection.httpFilters.map(filterNode)),
    section("tls", "Backend TLS", tlsNodes(projection)),
    section("hosts", "Virtual hosts", hosts),
    section("mesh", "Mesh config", meshNodes(projection.meshConfig)),
  ];
}
