/** The type of the console's ConfigService client (apart from `api.ts`, which needs the DOM). */
import type { Client } from "@connectrpc/connect";
import type { ConfigService } from "../../../gen/aether/registry/v1/config_service_pb.js";

/** The ConfigService client the views call. */
export type ConfigClient = Client<typeof ConfigService>;
