/**
 * gRPC server reflection (grpc.reflection.v1 and the older v1alpha, which
 * speak the same wire format) over a protobuf-es registry, so `grpcurl` and
 * `buf curl` can discover and call the API without a schema file.
 */
import {
  create,
  createFileRegistry,
  type DescEnum,
  type DescFile,
  type DescMessage,
  type DescService,
  type FileRegistry,
  toBinary,
} from "@bufbuild/protobuf";
import { FileDescriptorProtoSchema, FileDescriptorSetSchema } from "@bufbuild/protobuf/wkt";
import { Code, type ConnectRouter, type ServiceImpl } from "@connectrpc/connect";
import {
  file_grpc_reflection_v1_reflection,
  ServerReflection,
} from "../../../gen/grpc/reflection/v1/reflection_pb.js";
import {
  file_grpc_reflection_v1alpha_reflection,
  ServerReflection as ServerReflectionV1alpha,
} from "../../../gen/grpc/reflection/v1alpha/reflection_pb.js";

/**
 * One reflection question: the `message_request` oneof of a
 * ServerReflectionRequest of either version (v1 and v1alpha messages are
 * both assignable to it).
 */
export type ReflectionQuery =
  | {
      readonly case:
        | "fileByFilename"
        | "fileContainingSymbol"
        | "allExtensionNumbersOfType"
        | "listServices";
      readonly value: string;
    }
  | {
      readonly case: "fileContainingExtension";
      readonly value: { readonly containingType: string; readonly extensionNumber: number };
    }
  | { readonly case: undefined; readonly value?: undefined };

/**
 * One reflection answer: the `message_response` oneof of a
 * ServerReflectionResponse of either version, as message init shapes.
 */
export type ReflectionAnswer =
  | { case: "fileDescriptorResponse"; value: { fileDescriptorProto: Uint8Array[] } }
  | {
      case: "allExtensionNumbersResponse";
      value: { baseTypeName: string; extensionNumber: number[] };
    }
  | { case: "listServicesResponse"; value: { service: { name: string }[] } }
  | { case: "errorResponse"; value: { errorCode: number; errorMessage: string } };

/** Options of {@link createReflectionService}. */
export interface ReflectionServiceOptions {
  /**
   * The fully-qualified names of the services `list_services` reports, in
   * order. Default: every service in the registry, in registry order.
   */
  readonly services?: Iterable<string>;
}

/** The reflection service created by {@link createReflectionService}. */
export interface ReflectionService {
  /** The service names `list_services` reports. */
  readonly services: readonly string[];
  /**
   * Answers one question. File answers carry the serialized
   * FileDescriptorProto of the file asked for first, then those of all its
   * transitive dependencies. Unknown files, symbols, types and extensions are
   * answered with an error response (NOT_FOUND); an empty question with
   * INVALID_ARGUMENT. Never throws.
   */
  answer(query: ReflectionQuery): ReflectionAnswer;
  /** The grpc.reflection.v1.ServerReflection implementation. */
  readonly v1: ServiceImpl<typeof ServerReflection>;
  /** The grpc.reflection.v1alpha.ServerReflection implementation. */
  readonly v1alpha: ServiceImpl<typeof ServerReflectionV1alpha>;
}

/** The full names of the two reflection services. */
export const REFLECTION_SERVICE_NAMES: readonly string[] = [
  ServerReflection.typeName,
  ServerReflectionV1alpha.typeName,
];

/**
 * Returns `roots` and all their transitive dependencies, each once, every
 * file after the files it imports.
 */
export function collectFiles(roots: Iterable<DescFile>): DescFile[] {
  const ordered: DescFile[] = [];
  const seen = new Set<string>();
  const visit = (file: DescFile) => {
    if (seen.has(file.name)) return;
    seen.add(file.name);
    for (const dependency of file.dependencies) visit(dependency);
    ordered.push(file);
  };
  for (const root of roots) visit(root);
  return ordered;
}

/**
 * Creates a file registry holding `roots` (for example the `file_*`
 * descriptors exported by generated code) and all their transitive
 * dependencies, such as google/protobuf/timestamp.proto.
 */
export function createFileRegistryFromFiles(roots: Iterable<DescFile>): FileRegistry {
  const file = collectFiles(roots).map((desc) => desc.proto);
  return createFileRegistry(create(FileDescriptorSetSchema, { file }));
}

/** Waits for `promise`, or rejects with the signal's reason once it aborts. */
function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    if (signal.aborted) onAbort();
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(resolve, reject).finally(() => signal.removeEventListener("abort", onAbort));
  });
}

/**
 * Answers each request of a reflection stream (of either version) until the
 * client ends it. When `signal` aborts (the client went away, or the server
 * cancelled the call) it stops waiting and fails with the signal's reason.
 */
async function* answerEach<Request extends { host: string; messageRequest: ReflectionQuery }>(
  requests: AsyncIterable<Request>,
  signal: AbortSignal,
  answer: (query: ReflectionQuery) => ReflectionAnswer,
): AsyncGenerator<{
  validHost: string;
  originalRequest: Request;
  messageResponse: ReflectionAnswer;
}> {
  const iterator = requests[Symbol.asyncIterator]();
  for (;;) {
    const next = await raceAbort(iterator.next(), signal);
    if (next.done === true) return;
    const request = next.value;
    yield {
      validHost: request.host,
      originalRequest: request,
      messageResponse: answer(request.messageRequest),
    };
  }
}

function notFound(message: string): ReflectionAnswer {
  return { case: "errorResponse", value: { errorCode: Code.NotFound, errorMessage: message } };
}

/** Maps every fully-qualified name a file declares to that file. */
function indexSymbols(files: Iterable<DescFile>): Map<string, DescFile> {
  const index = new Map<string, DescFile>();
  for (const file of files) {
    const add = (name: string) => {
      if (!index.has(name)) index.set(name, file);
    };
    const addEnum = (desc: DescEnum) => {
      add(desc.typeName);
      // Enum values are siblings of their enum (C++ scoping rules).
      const scope = desc.parent?.typeName ?? file.proto.package;
      for (const value of desc.values) add(scope === "" ? value.name : `${scope}.${value.name}`);
    };
    const addMessage = (desc: DescMessage) => {
      add(desc.typeName);
      for (const field of desc.fields) add(`${desc.typeName}.${field.name}`);
      for (const oneof of desc.oneofs) add(`${desc.typeName}.${oneof.name}`);
      for (const extension of desc.nestedExtensions) add(extension.typeName);
      desc.nestedMessages.forEach(addMessage);
      desc.nestedEnums.forEach(addEnum);
    };
    file.messages.forEach(addMessage);
    file.enums.forEach(addEnum);
    for (const extension of file.extensions) add(extension.typeName);
    for (const service of file.services) {
      add(service.typeName);
      for (const method of service.methods) add(`${service.typeName}.${method.name}`);
    }
  }
  return index;
}

/**
 * Creates a reflection service answering from `registry`: files by name,
 * the file declaring a symbol (package-qualified services, methods,
 * messages, nested messages, fields, oneofs, enums, enum values and
 * extensions), extensions by extendee and number, and the advertised
 * service list. Register it with {@link registerReflectionServices}, or
 * pass {@link ReflectionService.v1} and {@link ReflectionService.v1alpha}
 * to `router.service` yourself.
 */
export function createReflectionService(
  registry: FileRegistry,
  options: ReflectionServiceOptions = {},
): ReflectionService {
  const services = [
    ...(options.services ??
      Array.from(registry, (desc) => (desc.kind === "service" ? desc.typeName : "")).filter(
        (name) => name !== "",
      )),
  ];
  const symbols = indexSymbols(registry.files);
  const encoded = new Map<string, Uint8Array>();

  const describe = (file: DescFile): ReflectionAnswer => {
    const files = [file, ...collectFiles([file]).filter((f) => f !== file)];
    const fileDescriptorProto = files.map((f) => {
      let bytes = encoded.get(f.name);
      if (bytes === undefined) {
        bytes = toBinary(FileDescriptorProtoSchema, f.proto);
        encoded.set(f.name, bytes);
      }
      return bytes;
    });
    return { case: "fileDescriptorResponse", value: { fileDescriptorProto } };
  };

  const answer = (query: ReflectionQuery): ReflectionAnswer => {
    switch (query.case) {
      case "listServices":
        return {
          case: "listServicesResponse",
          value: { service: services.map((name) => ({ name })) },
        };
      case "fileByFilename": {
        const file = registry.getFile(query.value);
        return file === undefined ? notFound(`file not found: ${query.value}`) : describe(file);
      }
      case "fileContainingSymbol": {
        const file = symbols.get(query.value.replace(/^\./, ""));
        return file === undefined ? notFound(`symbol not found: ${query.value}`) : describe(file);
      }
      case "fileContainingExtension": {
        const { containingType, extensionNumber } = query.value;
        const extendee = registry.getMessage(containingType);
        const extension =
          extendee === undefined ? undefined : registry.getExtensionFor(extendee, extensionNumber);
        return extension === undefined
          ? notFound(`extension not found: ${containingType} field ${extensionNumber}`)
          : describe(extension.file);
      }
      case "allExtensionNumbersOfType": {
        const extendee = registry.getMessage(query.value);
        if (extendee === undefined) return notFound(`type not found: ${query.value}`);
        const extensionNumber: number[] = [];
        for (const desc of registry) {
          if (desc.kind === "extension" && desc.extendee.typeName === extendee.typeName) {
            extensionNumber.push(desc.number);
          }
        }
        return {
          case: "allExtensionNumbersResponse",
          value: { baseTypeName: extendee.typeName, extensionNumber },
        };
      }
      default:
        return {
          case: "errorResponse",
          value: { errorCode: Code.InvalidArgument, errorMessage: "empty reflection request" },
        };
    }
  };

  return {
    services,
    answer,
    v1: {
      serverReflectionInfo: (requests, context) => answerEach(requests, context.signal, answer),
    },
    v1alpha: {
      serverReflectionInfo: (requests, context) => answerEach(requests, context.signal, answer),
    },
  };
}

/**
 * Registers grpc.reflection.v1 and grpc.reflection.v1alpha ServerReflection
 * on `router`, describing `services` (and the two reflection services
 * themselves) with every file they depend on. Returns the reflection
 * service, for tests and introspection.
 */
export function registerReflectionServices(
  router: ConnectRouter,
  services: readonly DescService[],
): ReflectionService {
  const registry = createFileRegistryFromFiles([
    ...services.map((service) => service.file),
    file_grpc_reflection_v1_reflection,
    file_grpc_reflection_v1alpha_reflection,
  ]);
  const names = [...new Set([...services.map((s) => s.typeName), ...REFLECTION_SERVICE_NAMES])];
  const reflection = createReflectionService(registry, { services: names });
  router.service(ServerReflection, reflection.v1);
  router.service(ServerReflectionV1alpha, reflection.v1alpha);
  return reflection;
}
