/**
 * Shared fixtures of the interop tests: seed projections (as proto JSON, the
 * format of `--seed` files and of Connect JSON responses), temporary seed
 * files, and a registrar process started with a seed.
 */
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import type { JsonObject } from "@bufbuild/protobuf";
import { type RegistrarProcess, startRegistrarProcess } from "../support/registrar-process.js";

export const execFileAsync = promisify(execFile);

/** The fully-qualified name of the service under test, as it appears in URLs. */
export const CONFIG_SERVICE = "aether.registry.v1.ConfigService";

/** An HTTP route projection in canonical proto JSON (no default values, so it round-trips). */
export function httpProjection(
  service: string,
  version: string,
  originCluster?: string,
): JsonObject {
  const [namespace = "", name = ""] = service.split("/");
  return {
    service,
    ...(originCluster === undefined ? {} : { originCluster }),
    version,
    routes: [
      {
        kind: "ROUTE_KIND_HTTP",
        namespace,
        name: `${name}-canary`,
        creationTime: "2026-11-01T09:00:00Z",
        role: "ROUTE_ROLE_PRODUCER",
        parentRefs: [{ service, port: 8080 }],
        hostnames: [`${name}.example.com`],
        rules: [
          {
            name: "beta-testers",
            matches: [
              {
                path: { type: "PATH_MATCH_TYPE_PATH_PREFIX", value: "/cart" },
                headers: [{ type: "STRING_MATCH_TYPE_EXACT", name: "x-beta", value: "true" }],
              },
            ],
            filters: [
              { requestHeaderModifier: { set: [{ name: "x-routed-by", value: "aether" }] } },
            ],
            backends: [
              { service: `${service}-v1`, port: 8080, weight: 90 },
              { service: `${service}-v2`, port: 8080, weight: 10 },
            ],
            timeouts: { request: "10s", backendRequest: "2.500s" },
          },
        ],
      },
    ],
  };
}

/** A gRPC route projection in canonical proto JSON. */
export function grpcProjection(service: string, version: string): JsonObject {
  const [namespace = "", name = ""] = service.split("/");
  return {
    service,
    version,
    routes: [
      {
        kind: "ROUTE_KIND_GRPC",
        namespace,
        name: `${name}-methods`,
        creationTime: "2026-11-02T09:00:00.123456789Z",
        role: "ROUTE_ROLE_PRODUCER",
        parentRefs: [{ service }],
        rules: [
          {
            matches: [
              {
                grpcMethod: {
                  type: "STRING_MATCH_TYPE_EXACT",
                  service: "payments.v1.Ledger",
                  method: "Append",
                },
              },
            ],
            backends: [{ service: `${service}-writer`, port: 9090, weight: 1 }],
          },
        ],
      },
    ],
  };
}

/** Returns `projection` with `originCluster` set, as a registrar returns it. */
export function stamped(projection: JsonObject, origin: string): JsonObject {
  return { ...projection, originCluster: origin };
}

/** The service names of a list of proto JSON projections. */
export function servicesOf(projections: readonly { service?: unknown }[]): string[] {
  return projections.map((p) => String(p.service));
}

const tempDirs: string[] = [];

/** Writes `{"projections": [...]}` to a new temporary file and returns its path. */
export async function writeSeedFile(projections: readonly JsonObject[]): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "aether-interop-seed-"));
  tempDirs.push(dir);
  const file = join(dir, "projections.json");
  await writeFile(file, JSON.stringify({ projections }, null, 2));
  return file;
}

/** Removes every seed file written by {@link writeSeedFile}. */
export async function removeSeedFiles(): Promise<void> {
  await Promise.all(tempDirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

/**
 * Starts a registrar of `cluster` seeded with `projections` and resolves once
 * it has logged every seeded projection as written.
 */
export async function startSeededRegistrar(
  cluster: string,
  projections: readonly JsonObject[],
  extraArgs: readonly string[] = [],
): Promise<RegistrarProcess> {
  const seed = await writeSeedFile(projections);
  const registrar = await startRegistrarProcess([
    "--cluster",
    cluster,
    "--seed",
    seed,
    ...extraArgs,
  ]);
  for (const projection of projections) {
    await registrar.waitForLog(
      (line) => line.msg === "seeded projection" && line.service === projection.service,
    );
  }
  return registrar;
}
