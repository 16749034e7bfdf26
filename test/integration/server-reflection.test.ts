import { create, createFileRegistry, type FileRegistry, fromBinary } from "@bufbuild/protobuf";
import {
  FieldDescriptorProto_Label,
  FieldDescriptorProto_Type,
  type FileDescriptorProto,
  FileDescriptorProtoSchema,
  file_google_protobuf_descriptor,
} from "@bufbuild/protobuf/wkt";
import { Code, createClient, createRouterTransport } from "@connectrpc/connect";
import { describe, expect, it } from "vitest";
import {
  ConfigService,
  file_aether_registry_v1_config_service,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { file_grpc_health_v1_health, Health } from "../../gen/grpc/health/v1/health_pb.js";
import * as v1 from "../../gen/grpc/reflection/v1/reflection_pb.js";
import * as v1alpha from "../../gen/grpc/reflection/v1alpha/reflection_pb.js";
import {
  createFileRegistryFromFiles,
  createReflectionService,
  REFLECTION_SERVICE_NAMES,
  type ReflectionAnswer,
  registerReflectionServices,
} from "../../services/registrar/server/reflection-service.js";

/** A file declaring `test.audited`, an extension of google.protobuf.MethodOptions. */
function createExtensionRegistry(): FileRegistry {
  const proto = create(FileDescriptorProtoSchema, {
    name: "test/audit.proto",
    package: "test",
    syntax: "proto3",
    dependency: ["google/protobuf/descriptor.proto"],
    extension: [
      {
        name: "audited",
        number: 50001,
        label: FieldDescriptorProto_Label.OPTIONAL,
        type: FieldDescriptorProto_Type.BOOL,
        extendee: ".google.protobuf.MethodOptions",
        jsonName: "audited",
      },
    ],
  });
  return createFileRegistry(proto, (name) =>
    name === file_google_protobuf_descriptor.proto.name
      ? file_google_protobuf_descriptor
      : undefined,
  );
}

async function* streamOf<T>(items: readonly T[]): AsyncGenerator<T> {
  yield* items;
}

function decodeFiles(answer: ReflectionAnswer): FileDescriptorProto[] {
  if (answer.case !== "fileDescriptorResponse") {
    throw new Error(`expected files, got ${JSON.stringify(answer)}`);
  }
  return answer.value.fileDescriptorProto.map((bytes) =>
    fromBinary(FileDescriptorProtoSchema, bytes),
  );
}

function fileNames(answer: ReflectionAnswer): string[] {
  return decodeFiles(answer).map((file) => file.name);
}

describe("createReflectionService", () => {
  const registry = createFileRegistry(
    createFileRegistryFromFiles([
      file_aether_registry_v1_config_service,
      file_grpc_health_v1_health,
    ]),
    createExtensionRegistry(),
  );
  const reflection = createReflectionService(registry);

  it("lists every service of the registry by default, or the ones it is given", () => {
    const answer = reflection.answer({ case: "listServices", value: "" });
    expect(answer.case).toBe("listServicesResponse");
    const names = answer.case === "listServicesResponse" ? answer.value.service : [];
    expect(names.map((s) => s.name).sort()).toEqual([
      "aether.registry.v1.ConfigService",
      "grpc.health.v1.Health",
    ]);
    const chosen = createReflectionService(registry, { services: ["grpc.health.v1.Health"] });
    expect(chosen.answer({ case: "listServices", value: "*" })).toEqual({
      case: "listServicesResponse",
      value: { service: [{ name: "grpc.health.v1.Health" }] },
    });
  });

  it("answers a file by name with the file first, then all its transitive dependencies", () => {
    const answer = reflection.answer({
      case: "fileByFilename",
      value: "aether/registry/v1/config_service.proto",
    });
    const names = fileNames(answer);
    expect(names[0]).toBe("aether/registry/v1/config_service.proto");
    expect(names.slice(1).sort()).toEqual([
      "aether/registry/v1/fleet.proto",
      "aether/registry/v1/projection.proto",
      "google/protobuf/duration.proto",
      "google/protobuf/timestamp.proto",
    ]);
  });

  it("answers with files a client can rebuild the schema from", () => {
    const files = decodeFiles(
      reflection.answer({
        case: "fileContainingSymbol",
        value: "aether.registry.v1.ConfigService",
      }),
    );
    const [root, ...dependencies] = files;
    if (root === undefined) throw new Error("no files");
    const rebuilt = createFileRegistry(root, (name) => dependencies.find((f) => f.name === name));
    const service = rebuilt.getService("aether.registry.v1.ConfigService");
    expect(service?.methods.map((m) => m.name)).toEqual(ConfigService.methods.map((m) => m.name));
    expect(rebuilt.getMessage("google.protobuf.Timestamp")).toBeDefined();
  });

  it.each([
    ["grpc.health.v1.Health", "grpc/health/v1/health.proto"],
    ["grpc.health.v1.Health.Watch", "grpc/health/v1/health.proto"],
    [".grpc.health.v1.HealthCheckRequest", "grpc/health/v1/health.proto"],
    ["grpc.health.v1.HealthCheckRequest.service", "grpc/health/v1/health.proto"],
    ["grpc.health.v1.HealthCheckResponse.ServingStatus", "grpc/health/v1/health.proto"],
    ["grpc.health.v1.HealthCheckResponse.SERVICE_UNKNOWN", "grpc/health/v1/health.proto"],
    ["aether.registry.v1.ConfigService.WatchConfig", "aether/registry/v1/config_service.proto"],
    ["aether.registry.v1.ServiceConfigProjection", "aether/registry/v1/projection.proto"],
    ["aether.registry.v1.RouteKind", "aether/registry/v1/projection.proto"],
    ["google.protobuf.Timestamp", "google/protobuf/timestamp.proto"],
    ["google.protobuf.DescriptorProto.ExtensionRange", "google/protobuf/descriptor.proto"],
    ["google.protobuf.FieldDescriptorProto.TYPE_BOOL", "google/protobuf/descriptor.proto"],
    ["test.audited", "test/audit.proto"],
  ])("finds the file declaring %s", (symbol, file) => {
    const answer = reflection.answer({ case: "fileContainingSymbol", value: symbol });
    expect(fileNames(answer)[0]).toBe(file);
  });

  it("finds extensions by extendee and number, and lists extension numbers", () => {
    const answer = reflection.answer({
      case: "fileContainingExtension",
      value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 50001 },
    });
    expect(fileNames(answer)).toEqual(["test/audit.proto", "google/protobuf/descriptor.proto"]);
    expect(
      reflection.answer({
        case: "allExtensionNumbersOfType",
        value: "google.protobuf.MethodOptions",
      }),
    ).toEqual({
      case: "allExtensionNumbersResponse",
      value: { baseTypeName: "google.protobuf.MethodOptions", extensionNumber: [50001] },
    });
    expect(
      reflection.answer({
        case: "allExtensionNumbersOfType",
        value: "grpc.health.v1.HealthCheckRequest",
      }),
    ).toEqual({
      case: "allExtensionNumbersResponse",
      value: { baseTypeName: "grpc.health.v1.HealthCheckRequest", extensionNumber: [] },
    });
  });

  it.each([
    { case: "fileByFilename", value: "no/such/file.proto" },
    { case: "fileContainingSymbol", value: "no.such.Symbol" },
    { case: "fileContainingSymbol", value: "grpc.health.v1.Health.NoSuchMethod" },
    { case: "allExtensionNumbersOfType", value: "no.such.Message" },
    {
      case: "fileContainingExtension",
      value: { containingType: "google.protobuf.MethodOptions", extensionNumber: 1 },
    },
    {
      case: "fileContainingExtension",
      value: { containingType: "no.such.Message", extensionNumber: 50001 },
    },
  ] as const)("answers $case $value with NOT_FOUND", (query) => {
    const answer = reflection.answer(query);
    expect(answer.case).toBe("errorResponse");
    expect(answer.value).toMatchObject({ errorCode: Code.NotFound });
  });

  it("answers an empty request with INVALID_ARGUMENT", () => {
    expect(reflection.answer({ case: undefined }).value).toMatchObject({
      errorCode: Code.InvalidArgument,
    });
  });
});

describe("registerReflectionServices", () => {
  const transport = createRouterTransport((router) => {
    registerReflectionServices(router, [Health, ConfigService]);
  });

  it("serves v1 on a stream, echoing host and request, describing the reflection services too", async () => {
    const client = createClient(v1.ServerReflection, transport);
    const requests = [
      create(v1.ServerReflectionRequestSchema, {
        host: "example",
        messageRequest: { case: "listServices", value: "" },
      }),
      create(v1.ServerReflectionRequestSchema, {
        messageRequest: {
          case: "fileContainingSymbol",
          value: "grpc.reflection.v1alpha.ServerReflection",
        },
      }),
      create(v1.ServerReflectionRequestSchema, {
        messageRequest: { case: "fileContainingSymbol", value: "nope" },
      }),
    ];
    const responses: v1.ServerReflectionResponse[] = [];
    for await (const response of client.serverReflectionInfo(streamOf(requests)))
      responses.push(response);

    expect(responses).toHaveLength(3);
    const [list, file, error] = responses;
    expect(list?.validHost).toBe("example");
    expect(list?.originalRequest?.messageRequest).toEqual(requests[0]?.messageRequest);
    expect(list?.messageResponse.case).toBe("listServicesResponse");
    if (list?.messageResponse.case === "listServicesResponse") {
      expect(list.messageResponse.value.service.map((s) => s.name)).toEqual([
        Health.typeName,
        ConfigService.typeName,
        ...REFLECTION_SERVICE_NAMES,
      ]);
    }
    expect(file?.messageResponse.case).toBe("fileDescriptorResponse");
    expect(error?.messageResponse).toMatchObject({
      case: "errorResponse",
      value: { errorCode: Code.NotFound },
    });
  });

  it("serves v1alpha with the same answers", async () => {
    const client = createClient(v1alpha.ServerReflection, transport);
    const request = create(v1alpha.ServerReflectionRequestSchema, {
      messageRequest: { case: "fileByFilename", value: "grpc/health/v1/health.proto" },
    });
    const responses: v1alpha.ServerReflectionResponse[] = [];
    for await (const response of client.serverReflectionInfo(streamOf([request])))
      responses.push(response);
    expect(responses).toHaveLength(1);
    const answer = responses[0]?.messageResponse;
    expect(answer?.case).toBe("fileDescriptorResponse");
    if (answer?.case === "fileDescriptorResponse") {
      const names = answer.value.fileDescriptorProto.map(
        (bytes) => fromBinary(FileDescriptorProtoSchema, bytes).name,
      );
      expect(names).toEqual(["grpc/health/v1/health.proto"]);
    }
  });
});
