/**
 * A minimal ConfigService consumer built on the generated client: it watches
 * a set of services (all when none are given) and prints one line per event.
 * Usage: node --import tsx clients/examples/watch-config.ts URL [--cacert CA.pem
 * --cert CERT.pem --key KEY.pem] [namespace/name…]; the PEM files are for an
 * https:// registrar that asks for a client certificate (mutual TLS).
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ConfigService, WatchEventType } from "../../gen/aether/registry/v1/config_service_pb.js";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { cacert: { type: "string" }, cert: { type: "string" }, key: { type: "string" } },
});
const [baseUrl, ...services] = positionals;
if (baseUrl === undefined) {
  process.stderr.write(
    "usage: watch-config.ts URL [--cacert CA.pem --cert CERT.pem --key KEY.pem] [namespace/name…]\n",
  );
  process.exit(2);
}
const pem = (file: string | undefined) => (file === undefined ? undefined : readFileSync(file));
const tls = { ca: pem(values.cacert), cert: pem(values.cert), key: pem(values.key) };
const client = createClient(ConfigService, createGrpcTransport({ baseUrl, nodeOptions: tls }));
const abort = new AbortController();
process.once("SIGINT", () => abort.abort());
try {
  for await (const event of client.watchConfig({ services }, { signal: abort.signal })) {
    const routes = event.projection?.routes.map((r) => `${r.namespace}/${r.name}`).join(",") ?? "";
    process.stdout.write(
      `${WatchEventType[event.type].padEnd(9)} rev=${event.revision} ${event.service} ${event.originCluster} ${event.projection?.version ?? ""} ${routes}\n`,
    );
  }
} catch (error) {
  if (!abort.signal.aborted) {
    process.stderr.write(
      `watch ended: ${error instanceof Error ? error.message : String(error)}\n`,
    );
    process.exitCode = 1;
  }
}
