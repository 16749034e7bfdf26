/**
 * The console's one connection: the generated ConfigService client over
 * connect-web's Connect transport to the page's own origin, where
 * `aetherctl dashboard` forwards the calls to the registrar with the CLI's
 * connection settings. Binary protobuf (smaller and faster to decode than
 * JSON at 1,000 services); unary calls are POSTs (the dashboard requires the
 * Connect-Protocol-Version header, which connect-web sends).
 */
import { createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-web";
import { ConfigService } from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { ConfigClient } from "./config-client.js";

export type { ConfigClient } from "./config-client.js";

/** A client of the ConfigService at `baseUrl` (default: the page's origin). */
export function createConfigClient(baseUrl: string = window.location.origin): ConfigClient {
  return createClient(ConfigService, createConnectTransport({ baseUrl, useBinaryFormat: true }));
}
