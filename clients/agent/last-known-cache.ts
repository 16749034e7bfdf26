/**
 * The agent's last-known cache: the accepted state (every trusted origin's
 * projection of the dependency set, with the revision it is consistent with,
 * and the local routes) persisted in `--cache-dir` so that a restarted agent
 * serves its route table before its registrar answers, or when it never does.
 *
 * File format (`routes-cache.v1`): one header line, then the payload.
 *
 * ```
 * aether-agent-cache 1 sha256=<hex of the payload> bytes=<payload length>\n
 * {"revision":"42","services":[…],"imported":[{"origin":…,"service":…,"projection":{…}}],"local":[…],"marks":[{"origin":…,"service":…,"version":…}],"savedAt":…}
 * ```
 *
 * An imported projection that carries a signature also has `encoded`, its
 * protobuf binary encoding (base64), which a reader prefers to the proto
 * JSON: JSON drops the unknown fields of a newer origin's projection, and
 * with them the bytes its signature covers, so the projection would no
 * longer verify after a restart. Added like `marks`: an older agent reads
 * the JSON and ignores it.
 *
 * `marks` are the high-water marks of rollback refusal (`version-marks.ts`),
 * kept so that a restarted agent still refuses an old value it had replaced
 * or seen deleted. The field was added without a new format version: a file
 * without it loads (its candidates' versions are the marks), and an older
 * agent reading a file with it ignores it.
 *
 * The checksum and the length cover the payload bytes exactly, so a
 * truncated or altered file is detected before it is parsed. Every save
 * replaces the file atomically (temporary file, fsync, rename, directory
 * fsync). A file that fails any check is reported and ignored, never fatal.
 */
import { createHash } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { fromBinary, fromJson, type JsonValue, toBinary, toJson } from "@bufbuild/protobuf";
import {
  type ServiceConfigProjection,
  ServiceConfigProjectionSchema,
} from "../../gen/aether/registry/v1/projection_pb.js";
import type { ImportCandidate } from "../../services/common/import-policy.js";
import type { VersionMark } from "../../services/common/version-marks.js";
import { createLatestWriter, type LatestWriter } from "./atomic-file.js";

/** The name of the cache file inside the cache directory. */
export const CACHE_FILE_NAME = "routes-cache.v1";
/** The format version this agent reads and writes. */
export const CACHE_FORMAT_VERSION = 1;

const MAGIC = "aether-agent-cache";
const HEADER = /^aether-agent-cache (\d+) sha256=([0-9a-f]{64}) bytes=(\d+)$/;

/** The state kept in the cache. */
export interface CachedState {
  /** The registrar revision the imported projections are consistent with. */
  readonly revision: bigint;
  /** The dependency set the imported projections are complete for, sorted. */
  readonly services: readonly string[];
  /** Every accepted origin's projection of those services (not only the winners). */
  readonly imported: readonly ImportCandidate[];
  /** The local (class-2) projections, one per service. */
  readonly local: readonly ServiceConfigProjection[];
  /** The high-water marks of rollback refusal; empty when the file had none. */
  readonly marks?: readonly VersionMark[];
  /** When the state was saved; undefined when unknown. */
  readonly savedAt?: Date;
}

/** Why a cache file was not used or not written. */
export type CacheErrorReason =
  | "checksum_mismatch"
  | "truncated"
  | "unsupported_version"
  | "malformed"
  | "read_failed"
  | "write_failed";

/** Every cache error reason, for metrics that pre-register their label values. */
export const CACHE_ERROR_REASONS: readonly CacheErrorReason[] = [
  "checksum_mismatch",
  "truncated",
  "unsupported_version",
  "malformed",
  "read_failed",
  "write_failed",
];

/** A cache file that cannot be used (or written), with the reason as a metric label. */
export class CacheFileError extends Error {
  override readonly name = "CacheFileError";
  /** The machine-readable reason. */
  readonly reason: CacheErrorReason;

  /** Creates the error; `message` says what is wrong with the file. */
  constructor(reason: CacheErrorReason, message: string, options?: ErrorOptions) {
    super(message, options);
    this.reason = reason;
  }
}

function sha256(bytes: Uint8Array): string {
  return createHash("sha256").update(bytes).digest("hex");
}

/** An imported projection's `projection` (proto JSON) and, when signed, `encoded` fields. */
interface ImportedEncoding {
  readonly projection: JsonValue;
  readonly encoded?: string;
}

/**
 * The encodings made so far, per received projection object (a received
 * projection is never changed): every save writes every held projection,
 * and without this each save encoded each of them again, twice when signed.
 */
const encodings = new WeakMap<ServiceConfigProjection, ImportedEncoding>();

/** `projection`'s {@link ImportedEncoding}, made on its first save. */
function importedEncoding(projection: ServiceConfigProjection): ImportedEncoding {
  let encoding = encodings.get(projection);
  if (encoding === undefined) {
    encoding = {
      projection: toJson(ServiceConfigProjectionSchema, projection),
      ...(projection.signature === undefined
        ? {}
        : {
            encoded: Buffer.from(toBinary(ServiceConfigProjectionSchema, projection)).toString(
              "base64",
            ),
          }),
    };
    encodings.set(projection, encoding);
  }
  return encoding;
}

/** Encodes a state as a cache file (header line and payload). */
export function encodeCacheFile(state: CachedState): Buffer {
  const payload = Buffer.from(
    JSON.stringify({
      revision: state.revision.toString(),
      services: state.services,
      imported: state.imported.map((c) => ({
        origin: c.origin,
        service: c.service,
        ...importedEncoding(c.projection),
      })),
      local: state.local.map((p) => toJson(ServiceConfigProjectionSchema, p)),
      marks: state.marks ?? [],
      savedAt: (state.savedAt ?? new Date()).toISOString(),
    }),
    "utf8",
  );
  const header = `${MAGIC} ${CACHE_FORMAT_VERSION} sha256=${sha256(payload)} bytes=${payload.length}\n`;
  return Buffer.concat([Buffer.from(header, "utf8"), payload]);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function malformed(message: string, cause?: unknown): CacheFileError {
  return new CacheFileError("malformed", `cache file is malformed: ${message}`, { cause });
}

function readProjection(value: unknown, where: string): ServiceConfigProjection {
  try {
    return fromJson(ServiceConfigProjectionSchema, value as JsonValue);
  } catch (error) {
    throw malformed(`${where}: ${(error as Error).message}`, error);
  }
}

/** Decodes an `encoded` projection (base64 of its protobuf binary encoding). */
function readEncoded(value: unknown, where: string): ServiceConfigProjection {
  if (typeof value !== "string" || !/^[A-Za-z0-9+/]*={0,2}$/.test(value)) {
    throw malformed(`${where} is not base64`);
  }
  try {
    return fromBinary(ServiceConfigProjectionSchema, Buffer.from(value, "base64"));
  } catch (error) {
    throw malformed(`${where}: ${(error as Error).message}`, error);
  }
}

function readPayload(value: unknown): CachedState {
  if (!isRecord(value)) throw malformed("the payload is not a JSON object");
  const { revision, services, imported, local, marks, savedAt } = value;
  if (typeof revision !== "string" || !/^\d+$/.test(revision)) {
    throw malformed("revision is not a decimal string");
  }
  if (!Array.isArray(services) || !services.every((s) => typeof s === "string")) {
    throw malformed("services is not a list of strings");
  }
  if (!Array.isArray(imported)) throw malformed("imported is not a list");
  if (!Array.isArray(local)) throw malformed("local is not a list");
  const candidates = imported.map((item: unknown, index): ImportCandidate => {
    if (!isRecord(item) || typeof item.origin !== "string" || typeof item.service !== "string") {
      throw malformed(`imported[${index}] has no origin and service`);
    }
    const where = `imported[${index}]`;
    return {
      origin: item.origin,
      service: item.service,
      projection:
        item.encoded === undefined
          ? readProjection(item.projection, `${where}.projection`)
          : readEncoded(item.encoded, `${where}.encoded`),
    };
  });
  const date = typeof savedAt === "string" ? new Date(savedAt) : undefined;
  if (marks !== undefined && !Array.isArray(marks)) throw malformed("marks is not a list");
  const readMarks = (marks ?? []).map((item: unknown, index): VersionMark => {
    if (
      !isRecord(item) ||
      typeof item.origin !== "string" ||
      typeof item.service !== "string" ||
      typeof item.version !== "string"
    ) {
      throw malformed(`marks[${index}] has no origin, service and version`);
    }
    return { origin: item.origin, service: item.service, version: item.version };
  });
  return {
    revision: BigInt(revision),
    services: [...(services as string[])].sort(),
    imported: candidates,
    local: local.map((item: unknown, index) => readProjection(item, `local[${index}]`)),
    marks: readMarks,
    savedAt: date !== undefined && !Number.isNaN(date.getTime()) ? date : undefined,
  };
}

/**
 * Decodes a cache file. Throws {@link CacheFileError} with reason
 * `truncated` (shorter than its header says, or no complete header),
 * `unsupported_version`, `checksum_mismatch` or `malformed`.
 */
export function decodeCacheFile(bytes: Uint8Array): CachedState {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const newline = buffer.indexOf(0x0a);
  if (newline < 0) {
    const text = buffer.toString("utf8");
    if (text === "" || MAGIC.startsWith(text) || text.startsWith(MAGIC)) {
      throw new CacheFileError("truncated", "cache file is truncated: its header is incomplete");
    }
    throw malformed("it does not start with an aether-agent-cache header");
  }
  const header = buffer.subarray(0, newline).toString("utf8");
  if (!header.startsWith(`${MAGIC} `)) {
    throw malformed("it does not start with an aether-agent-cache header");
  }
  const match = HEADER.exec(header);
  const version = /^aether-agent-cache (\d+)/.exec(header)?.[1];
  if (version !== undefined && Number(version) !== CACHE_FORMAT_VERSION) {
    throw new CacheFileError(
      "unsupported_version",
      `cache file has format version ${version}; this agent reads version ${CACHE_FORMAT_VERSION}`,
    );
  }
  if (match === null) throw malformed(`its header ${JSON.stringify(header)} is not valid`);
  const payload = buffer.subarray(newline + 1);
  const expectedBytes = Number(match[3]);
  if (payload.length < expectedBytes) {
    throw new CacheFileError(
      "truncated",
      `cache file is truncated: ${payload.length} of ${expectedBytes} payload bytes`,
    );
  }
  if (payload.length > expectedBytes) {
    throw malformed(`${payload.length - expectedBytes} bytes follow the payload`);
  }
  if (sha256(payload) !== match[2]) {
    throw new CacheFileError(
      "checksum_mismatch",
      "cache file checksum mismatch: the payload is not what was written",
    );
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(payload.toString("utf8"));
  } catch (error) {
    throw malformed(`the payload is not JSON: ${(error as Error).message}`, error);
  }
  return readPayload(parsed);
}

/** Options of {@link createLastKnownCache}. */
export interface LastKnownCacheOptions {
  /** The cache directory (created when missing). */
  readonly dir: string;
  /** Called for every cache file that was not used and every failed save. */
  readonly onError: (error: CacheFileError) => void;
}

/** The cache in a directory; see {@link createLastKnownCache}. */
export interface LastKnownCache {
  /** The cache file's path. */
  readonly path: string;
  /**
   * Reads the cache. Resolves undefined when there is no cache file yet, or
   * when it cannot be used (after reporting it to `onError`); never rejects.
   */
  load(): Promise<CachedState | undefined>;
  /**
   * Schedules `state` to be saved (atomically; a burst of saves writes only
   * the latest). Never rejects: failures go to `onError`.
   */
  save(state: CachedState): void;
  /** Resolves once every scheduled save has finished. */
  flush(): Promise<void>;
}

/** Creates the cache in `options.dir`. */
export function createLastKnownCache(options: LastKnownCacheOptions): LastKnownCache {
  const path = join(options.dir, CACHE_FILE_NAME);
  let ensured: Promise<void> | undefined;
  let writer: LatestWriter | undefined;
  const report = (reason: CacheErrorReason, message: string, cause: unknown) =>
    options.onError(new CacheFileError(reason, message, { cause }));

  return {
    path,
    async load() {
      let bytes: Buffer;
      try {
        bytes = await readFile(path);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        report("read_failed", `cannot read ${path}: ${(error as Error).message}`, error);
        return undefined;
      }
      try {
        return decodeCacheFile(bytes);
      } catch (error) {
        if (error instanceof CacheFileError) options.onError(error);
        else report("malformed", `cache file ${path}: ${(error as Error).message}`, error);
        return undefined;
      }
    },
    save(state) {
      ensured ??= mkdir(options.dir, { recursive: true }).then(() => undefined);
      writer ??= createLatestWriter(path, {
        onError: (error) => report("write_failed", `cannot write ${path}: ${error.message}`, error),
      });
      const data = encodeCacheFile(state);
      const target = writer;
      ensured.then(
        () => target.write(data),
        (error: unknown) => {
          ensured = undefined;
          report(
            "write_failed",
            `cannot create ${options.dir}: ${(error as Error).message}`,
            error,
          );
        },
      );
    },
    async flush() {
      await ensured?.catch(() => undefined);
      await writer?.flush();
    },
  };
}
