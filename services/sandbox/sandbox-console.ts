/**
 * The sandbox's console: `aetherctl dashboard`'s server (the console's
 * static files and its ConfigService gateway) forwarding to the hub
 * registrar as the operator would run it: with the operator's X.509-SVID,
 * every trust domain's bundle and the hub registrar's SPIFFE ID checked
 * (what `operator.env` gives aetherctl), or in plaintext with `--plaintext`;
 * and reading its agents' route tables (`aetherctl dashboard --agent
 * east=URL --agent west=URL`) for the Explain view.
 */

import { DEFAULT_ASSETS_DIR } from "../../clients/aetherctl/dashboard/dashboard-flags.js";
import {
  createDashboardServer,
  type DashboardServer,
} from "../../clients/aetherctl/dashboard/dashboard-server.js";
import { createRegistrarClient } from "../../clients/aetherctl/registrar-client.js";
import { type ClientTlsOptions, clientTlsOptions } from "../runtime/tls/client-tls.js";
import { loadTlsMaterial } from "../runtime/tls/material-read.js";
import { registrarIdOf, trustDomainOf } from "./sandbox-identities.js";
import type { SandboxParts } from "./sandbox-parts.js";
import type { SandboxPki } from "./sandbox-pki.js";
import { HUB_CLUSTER } from "./sandbox-topology.js";

/** The deadline of each unary call the console makes through the sandbox (aetherctl's default). */
const CONSOLE_CALL_TIMEOUT_MS = 10_000;

/** The operator's client TLS options (its SVID, every bundle, the hub registrar's ID checked). */
async function operatorTls(pki: SandboxPki): Promise<ClientTlsOptions> {
  const bundleFiles = new Map(
    [...pki.bundles].map(([cluster, file]) => [trustDomainOf(cluster), file]),
  );
  const material = await loadTlsMaterial({
    certFile: pki.operator.cert,
    keyFile: pki.operator.key,
    bundleFiles,
  });
  return clientTlsOptions(() => material, registrarIdOf(HUB_CLUSTER));
}

/**
 * Creates the console's dashboard server on the sandbox's listen host and
 * console port, forwarding to the hub at `hubUrl` with the operator's
 * identity when the sandbox has a PKI, with `options.agents` (cluster →
 * agent base URL) under `/agents` (not listening yet: `start()` resolves
 * with its URL); rejects when the operator's TLS files are refused.
 * `options.assetsDir` defaults to `clients/console/dist/`.
 */
export async function createSandboxConsole(
  parts: Pick<SandboxParts, "config" | "ports" | "pki">,
  hubUrl: string,
  options: { readonly agents: ReadonlyMap<string, string>; readonly assetsDir?: string },
): Promise<DashboardServer> {
  const tls = parts.pki === undefined ? undefined : await operatorTls(parts.pki);
  return createDashboardServer({
    client: createRegistrarClient(hubUrl, tls),
    timeoutMs: CONSOLE_CALL_TIMEOUT_MS,
    assetsDir: options.assetsDir ?? DEFAULT_ASSETS_DIR,
    agents: options.agents,
    host: parts.config.host,
    port: parts.ports.console,
  });
}
