/**
 * The Gateway API conformance corpus (`gateway-api/`, see its README): the
 * shapes of its test files and cases, and a loader that builds the object
 * set of each case (infrastructure, then the test's manifests, minus
 * `before.delete`).
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import type { KubeObject } from "../../services/common/kube-object.js";

/** The corpus directory inside the project. */
export const CORPUS_DIR = fileURLToPath(new URL("./gateway-api/", import.meta.url));

/** A reference to an object, as `before.delete` lists them. */
export interface ObjectRef {
  /** The object's apiVersion. */
  readonly apiVersion: string;
  /** The object's kind. */
  readonly kind: string;
  /** The object's namespace. */
  readonly namespace?: string;
  /** The object's name. */
  readonly name: string;
}

/** A request of the gateway profile (north/south, through a Gateway listener). */
export interface GatewayRequest {
  /** The Gateway whose address receives the request. */
  readonly gateway: { readonly namespace: string; readonly name: string };
  /** The Gateway port the client connects to. */
  readonly port: number;
  /** `http` or `https`. */
  readonly scheme: string;
  /** The TLS server name, for `https`. */
  readonly sni?: string;
  /** Absent (HTTP/1.1), `HTTP/2`, `h2c-prior-knowledge` or `grpc`. */
  readonly protocol?: string;
  /** The Host header (`null`: the Gateway's address). */
  readonly host?: string | null;
  /** The HTTP method. */
  readonly method?: string;
  /** Path plus query. */
  readonly path?: string;
  /** Request headers. */
  readonly headers?: Readonly<Record<string, string>>;
  /** Headers the echo backend adds to its response. */
  readonly backendResponseHeaders?: Readonly<Record<string, string>>;
  /** gRPC `:authority` (`null`: the Gateway's address). */
  readonly authority?: string | null;
  /** The gRPC call. */
  readonly grpc?: { readonly service: string; readonly method: string };
  /** gRPC metadata. */
  readonly metadata?: Readonly<Record<string, string>>;
}

/** A request of the mesh profile (east/west, from a pod to a Service). */
export interface MeshRequest {
  /** The calling workload. */
  readonly from: { readonly namespace: string; readonly workload: string };
  /** `http` or `grpc`. */
  readonly protocol: string;
  /** The authority the client dials: `svc`, `svc:port`, `svc.namespace`, or a pod IP. */
  readonly host: string;
  /** The HTTP method. */
  readonly method?: string;
  /** Path plus query. */
  readonly path?: string;
  /** Request headers (a `Host` entry overrides only the Host header). */
  readonly headers?: Readonly<Record<string, string>>;
}

/** A mirror expectation. */
export interface MirrorExpectation {
  /** The mirror backend (Service / workload name). */
  readonly name: string;
  /** Its namespace. */
  readonly namespace: string;
  /** The expected share of requests mirrored, in percent (statistical). */
  readonly percent?: number;
}

/** What a case expects; only the keys present are asserted. */
export interface Expectation {
  /** The HTTP status, or the acceptable statuses. */
  readonly status?: number | readonly number[];
  /** The gRPC status name (`OK`, `Unimplemented`). */
  readonly grpcStatus?: string;
  /** The serving workload's name prefix; `null`: no backend may be reached. */
  readonly backend?: string | null;
  /** The serving backend's namespace. */
  readonly namespace?: string;
  /** The path and query the backend must receive (URLRewrite). */
  readonly rewrittenPath?: string;
  /** The Host the backend must receive (URLRewrite). */
  readonly rewrittenHost?: string;
  /** Request headers the backend must receive, with these values. */
  readonly requestHeaders?: Readonly<Record<string, string>>;
  /** Request headers the backend must not receive. */
  readonly absentRequestHeaders?: readonly string[];
  /** Response headers the client must see, with these values. */
  readonly responseHeaders?: Readonly<Record<string, string>>;
  /** Response headers the client must see, with one of these values. */
  readonly responseHeadersOneOf?: Readonly<Record<string, readonly string[]>>;
  /** Whether spaces are ignored when comparing response header values. */
  readonly ignoreWhitespaceInResponseHeaders?: boolean;
  /** Response headers the client must not see. */
  readonly absentResponseHeaders?: readonly string[];
  /** The redirect Location's parts (`port` absent: the scheme's well-known port). */
  readonly redirect?: {
    readonly scheme: string;
    readonly host?: string;
    readonly port?: number;
    readonly path: string;
  };
  /** Backends that must also receive a copy of the request. */
  readonly mirroredTo?: readonly MirrorExpectation[];
  /** The expected share of requests per backend (statistical). */
  readonly weights?: Readonly<Record<string, number>>;
  /** The absolute tolerance of each share. */
  readonly weightTolerance?: number;
  /** How many requests a statistical check sends. */
  readonly samples?: number;
  /** A request header whose single value must equal the serving backend's name. */
  readonly requestHeaderEqualsBackend?: string;
}

/** One case of a test file. */
export interface CorpusCase {
  /** `[mesh/]NAME#index`. */
  readonly id: string;
  /** The upstream test case name. */
  readonly name: string;
  /** The request (its shape depends on the profile). */
  readonly request: GatewayRequest | MeshRequest;
  /** The expected outcome. */
  readonly expect: Expectation;
  /** Objects to delete before sending the request. */
  readonly before?: { readonly delete?: readonly ObjectRef[] };
  /** Why an offline evaluator cannot decide this case. */
  readonly skip?: string;
  /** Whether the case is probabilistic. */
  readonly statistical?: boolean;
}

/** One test file of the corpus. */
export interface CorpusFile {
  /** The file stem. */
  readonly name: string;
  /** `gateway` or `mesh`. */
  readonly profile: "gateway" | "mesh";
  /** The infrastructure file, relative to the corpus directory. */
  readonly infrastructure: string;
  /** The test's own objects, in creation order. */
  readonly manifests: readonly KubeObject[];
  /** The cases. */
  readonly cases: readonly CorpusCase[];
}

/** A case with the file it belongs to. */
export interface LoadedCase {
  /** The test file. */
  readonly file: CorpusFile;
  /** The case. */
  readonly testCase: CorpusCase;
}

function readJson<T>(relative: string): T {
  return JSON.parse(readFileSync(join(CORPUS_DIR, relative), "utf8")) as T;
}

const infrastructureCache = new Map<string, readonly KubeObject[]>();

function infrastructure(relative: string): readonly KubeObject[] {
  let objects = infrastructureCache.get(relative);
  if (objects === undefined) {
    objects = readJson<{ manifests: KubeObject[] }>(relative).manifests;
    infrastructureCache.set(relative, objects);
  }
  return objects;
}

/** Loads every case of every test file, gateway files first, each in file order. */
export function loadCorpus(): LoadedCase[] {
  const files: string[] = [];
  for (const dir of ["", "mesh/"]) {
    for (const entry of readdirSync(join(CORPUS_DIR, dir)).sort()) {
      if (entry.endsWith(".json") && entry !== "index.json") files.push(`${dir}${entry}`);
    }
  }
  return files.flatMap((relative) => {
    const file = readJson<CorpusFile>(relative);
    return file.cases.map((testCase) => ({ file, testCase }));
  });
}

function isDeleted(object: KubeObject, refs: readonly ObjectRef[]): boolean {
  return refs.some(
    (ref) =>
      ref.apiVersion === object.apiVersion &&
      ref.kind === object.kind &&
      ref.name === object.metadata?.name &&
      (ref.namespace ?? "") === (object.metadata?.namespace ?? ""),
  );
}

/**
 * The objects a case runs against: the infrastructure, then the test's
 * manifests, minus `before.delete`. List order is creation order, so objects
 * without a creation timestamp get one a second apart in that order.
 */
export function objectsOf({ file, testCase }: LoadedCase): KubeObject[] {
  const deleted = testCase.before?.delete ?? [];
  const start = Date.UTC(2026, 0, 1);
  return [...infrastructure(file.infrastructure), ...file.manifests]
    .map((object, index) =>
      object.metadata?.creationTimestamp !== undefined
        ? object
        : {
            ...object,
            metadata: {
              ...object.metadata,
              creationTimestamp: new Date(start + index * 1000).toISOString().replace(".000Z", "Z"),
            },
          },
    )
    .filter((object) => !isDeleted(object, deleted));
}
