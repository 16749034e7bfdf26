/**
 * A ConfigService client of @grpc/grpc-js, generated at run time by
 * @grpc/proto-loader from the .proto contract: an independent gRPC
 * implementation for the interop and mutual-TLS tests.
 *
 * proto-loader (protobuf.js) ships google/protobuf/{timestamp,duration,…}.proto
 * and resolves those imports to its bundled copies before it looks in
 * `includeDirs`, so `proto/` is the only include directory needed.
 */
import { fileURLToPath } from "node:url";
import type * as grpc from "@grpc/grpc-js";
import { loadPackageDefinition } from "@grpc/grpc-js";
import { loadSync } from "@grpc/proto-loader";

const PROTO_ROOT = fileURLToPath(new URL("../../proto", import.meta.url));

export interface GrpcJsTimestamp {
  readonly seconds: string;
  readonly nanos: number;
}

export interface GrpcJsProjection {
  readonly service: string;
  readonly originCluster: string;
  readonly version: string;
  readonly routes: {
    readonly kind: string;
    readonly name: string;
    readonly creationTime: GrpcJsTimestamp | null;
    readonly rules: {
      readonly backends: { readonly service: string; readonly weight: number }[];
      readonly timeouts: { readonly request: GrpcJsTimestamp | null } | null;
    }[];
  }[];
}

export interface GrpcJsListAllResponse {
  readonly projections: GrpcJsProjection[];
  readonly nextPageToken: string;
  readonly revision: string;
}

export interface GrpcJsWatchResponse {
  readonly type: string;
  readonly projection: GrpcJsProjection | null;
  readonly service: string;
  readonly originCluster: string;
  readonly revision: string;
  readonly resumed: boolean;
}

export interface ConfigServiceClient extends grpc.Client {
  ListAllConfig(
    request: Record<string, unknown>,
    callback: (error: grpc.ServiceError | null, response?: GrpcJsListAllResponse) => void,
  ): grpc.ClientUnaryCall;
  WatchConfig(request: Record<string, unknown>): grpc.ClientReadableStream<GrpcJsWatchResponse>;
}

export type ConfigServiceConstructor = new (
  address: string,
  credentials: grpc.ChannelCredentials,
  options?: grpc.ClientOptions,
) => ConfigServiceClient;

/** The generated client class of ConfigService. */
export function loadConfigServiceClient(): ConfigServiceConstructor {
  const definition = loadSync("aether/registry/v1/config_service.proto", {
    includeDirs: [PROTO_ROOT],
    keepCase: false,
    longs: String,
    enums: String,
    defaults: true,
    oneofs: true,
  });
  const loaded = loadPackageDefinition(definition) as unknown as {
    aether: { registry: { v1: { ConfigService: ConfigServiceConstructor } } };
  };
  return loaded.aether.registry.v1.ConfigService;
}

/** ListAllConfig as a promise. */
export function listAllConfig(
  client: ConfigServiceClient,
  request: Record<string, unknown>,
): Promise<GrpcJsListAllResponse> {
  return new Promise((resolve, reject) => {
    client.ListAllConfig(request, (error, response) => {
      if (error !== null || response === undefined) reject(error);
      else resolve(response);
    });
  });
}
