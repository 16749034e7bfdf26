/**
 * Reading what the export controller wrote straight from etcd (raw keys and
 * bytes, not through the store), what it should have written, and starting
 * exporting registrar processes over a fixture copy.
 */
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { fromBinary, toBinary } from "@bufbuild/protobuf";
import type { Etcd3, IKeyValue } from "etcd3";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { projectServices } from "../../services/common/projector.js";
import { originKeyPrefix, parseProjectionKey } from "../../services/registrar/store/store-key.js";
import { readManifestObjects } from "./memory-source.js";
import { type RegistrarProcess, startRegistrarProcess } from "./registrar-process.js";

/** One raw projection key as etcd holds it. */
export interface RawProjection {
  /** The value's bytes. */
  readonly bytes: Uint8Array;
  /** The value, decoded. */
  readonly projection: ServiceConfigProjection;
  /** The key's modification revision. */
  readonly modRevision: number;
}

/** Reads every projection key of `origin` under `prefix`, by service. */
export async function readRawProjections(
  raw: Etcd3,
  prefix: string,
  origin: string,
): Promise<Map<string, RawProjection>> {
  const response = await raw.getAll().prefix(originKeyPrefix(prefix, origin)).exec();
  const result = new Map<string, RawProjection>();
  for (const kv of response.kvs) {
    const parts = parseProjectionKey(prefix, kv.key.toString("utf8"));
    if (parts === undefined) throw new Error(`not a projection key: ${kv.key.toString("utf8")}`);
    result.set(parts.service, {
      bytes: new Uint8Array(kv.value),
      projection: fromBinary(ServiceConfigProjectionSchema, kv.value),
      modRevision: Number(kv.mod_revision),
    });
  }
  return result;
}

/** Returns each service's version, by service. */
export function versionsOf(projections: Map<string, RawProjection>): Record<string, string> {
  return Object.fromEntries([...projections].map(([s, p]) => [s, p.projection.version]));
}

/**
 * Returns the bytes an exporter of `origin` should have written for the
 * manifests in `dir`, given the versions it chose: the projector's output
 * with `version` and `originCluster` stamped, by service.
 */
export async function expectedBytes(
  dir: string,
  origin: string,
  versions: Record<string, string>,
): Promise<Map<string, Uint8Array>> {
  const { projections } = projectServices(await readManifestObjects(dir));
  return new Map(
    projections.map((p) => [
      p.service,
      toBinary(ServiceConfigProjectionSchema, {
        ...p,
        version: versions[p.service] ?? "",
        originCluster: origin,
      }),
    ]),
  );
}

/** Reads a Prometheus sample from a registrar's `/metrics` (moved to scrape-metric.ts). */
export { scrapeMetric } from "./scrape-metric.js";

/** Options of {@link startExportRegistrar}. */
export interface ExportRegistrarOptions {
  /** The etcd client URL. */
  readonly endpoint: string;
  /** The store prefix. */
  readonly prefix: string;
  /** The manifest directory (`--export-source dir:<dir>`). */
  readonly dir: string;
  /** The cluster; default `hub`. */
  readonly cluster?: string;
  /** The election TTL; default `2s`. */
  readonly electionTtl?: string;
  /** More flags. */
  readonly extra?: readonly string[];
}

/** Starts a registrar process over etcd that exports a manifest directory. */
export function startExportRegistrar(options: ExportRegistrarOptions): Promise<RegistrarProcess> {
  return startRegistrarProcess([
    "--cluster",
    options.cluster ?? "hub",
    "--store",
    "etcd",
    "--etcd-endpoints",
    options.endpoint,
    "--etcd-prefix",
    options.prefix,
    "--store-timeout",
    "1s",
    "--export-source",
    `dir:${options.dir}`,
    "--election-ttl",
    options.electionTtl ?? "2s",
    ...(options.extra ?? []),
  ]);
}

/**
 * Rewrites the checkout canary's weights (90/10 in the fixtures: the first
 * and second `weight:` of shop/checkout-routes.yaml) in a fixture copy.
 */
export async function setCanaryWeights(dir: string, stable: number, canary: number): Promise<void> {
  const path = join(dir, "shop/checkout-routes.yaml");
  let seen = 0;
  const text = (await readFile(path, "utf8")).replace(/weight: \d+/g, (match) => {
    seen++;
    if (seen === 1) return `weight: ${stable}`;
    return seen === 2 ? `weight: ${canary}` : match;
  });
  await writeFile(path, text);
}

/** The weights of the checkout canary's first rule as stored under `origin`, joined by commas. */
export async function storedCanaryWeights(
  raw: Etcd3,
  prefix: string,
  origin = "hub",
): Promise<string | undefined> {
  const stored = await readRawProjections(raw, prefix, origin);
  return stored
    .get("shop/checkout")
    ?.projection.routes[0]?.rules[0]?.backends.map((b) => b.weight)
    .join();
}

/** A raw etcd watch that records every change under a key prefix; see {@link recordChanges}. */
export interface ChangeRecorder {
  /** The changes so far, in order. */
  readonly changes: { readonly type: "put" | "delete"; readonly key: string }[];
  /** Stops watching. */
  cancel(): Promise<void>;
}

/**
 * Watches every key under `keyPrefix` with etcd3's own watcher, from the
 * revision after the current one, and records each put and delete of a
 * projection key (`…/clusters/<origin>/config/…`): the rest of an origin's
 * subtree, such as its export election's keys, is not projections. Other
 * tests' writes (other prefixes, leases expiring) are not seen, unlike the
 * global revision.
 */
export async function recordChanges(raw: Etcd3, keyPrefix: string): Promise<ChangeRecorder> {
  const current = await raw.kv.range({ key: Buffer.from("/"), count_only: true });
  const changes: { type: "put" | "delete"; key: string }[] = [];
  const watcher = await raw
    .watch()
    .prefix(keyPrefix)
    .startRevision(String(Number(current.header.revision) + 1))
    .create();
  const record = (type: "put" | "delete") => (kv: IKeyValue) => {
    const key = kv.key.toString();
    if (/\/clusters\/[^/]+\/config\//.test(key)) changes.push({ type, key });
  };
  watcher.on("put", record("put"));
  watcher.on("delete", record("delete"));
  watcher.on("error", () => {});
  return { changes, cancel: () => watcher.cancel() };
}
