/**
 * Runs a registrar in the test process on a real loopback socket, with a
 * generated Connect client for it, for tests that need to reach inside (its
 * store or cache) as well as call it over the wire.
 */
import { type Client, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { createRegistrar, type Registrar } from "../../services/registrar/registrar.js";
import {
  parseRegistrarFlags,
  type RegistrarConfig,
} from "../../services/registrar/registrar-flags.js";
import type { ConfigStore } from "../../services/registrar/store/config-store.js";

/** A started in-process registrar. */
export interface TestRegistrar {
  readonly registrar: Registrar;
  readonly url: string;
  readonly client: Client<typeof ConfigService>;
  stop(): Promise<void>;
}

/**
 * Starts a registrar from command-line style flags (`--cluster` is required;
 * `--listen 127.0.0.1:0` is added unless they have a `--listen`) over `store`, and waits until its cache has
 * synced when `waitSynced` is true (the default).
 */
export async function startTestRegistrar(
  flags: readonly string[],
  options: { store?: ConfigStore; waitSynced?: boolean } = {},
): Promise<TestRegistrar> {
  const listen = flags.includes("--listen") ? [] : ["--listen", "127.0.0.1:0"];
  const parsed = parseRegistrarFlags([...flags, ...listen]);
  if (parsed === "help") throw new Error("unexpected --help");
  const config: RegistrarConfig = parsed;
  const registrar = createRegistrar({ config, store: options.store, processMetrics: false });
  const address = await registrar.start();
  if (options.waitSynced ?? true) await registrar.cache.whenSynced();
  const client = createClient(
    ConfigService,
    createConnectTransport({ baseUrl: address.url, httpVersion: "1.1" }),
  );
  return { registrar, url: address.url, client, stop: () => registrar.stop() };
}
