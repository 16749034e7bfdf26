/**
 * A minimal ConfigService consumer built on the generated client: it watches
 * a set of services (all when none are given) and prints one line per event.
 * Usage: node --import tsx clients/examples/watch-config.ts URL [namespace/name…]
 */
import { createClient } from "@connectrpc/connect";
import { createGrpcTransport } from "@connectrpc/connect-node";
import { ConfigService, WatchEventType } from "../../gen/aether/registry/v1/config_service_pb.js";

const [baseUrl, ...services] = process.argv.slice(2);
if (baseUrl === undefined) {
  process.stderr.write("usage: watch-config.ts URL [namespace/name…]\n");
  process.exit(2);
}
const client = createClient(ConfigService, createGrpcTransport({ baseUrl }));
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
