/**
 * Pieces both object sources share: the stable object order, the
 * normalisation used to compare what a directory and the API server hold,
 * the change publisher (listeners are told only when the snapshot's content
 * changed), the first-sync gate behind `whenSynced`, and the start/stop
 * life cycle around them.
 */
import type { KubeObject } from "../common/kube-object.js";
import type { Logger } from "../runtime/logger.js";
import type { SyncGate } from "../runtime/sync-gate.js";
import type { ObjectSource, SourceProblem } from "./object-source.js";

/** The annotation `kubectl apply` writes; it repeats the object and is noise for comparisons. */
export const LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration";
/** The label the API server puts on every Namespace (its name); manifests rarely carry it. */
export const NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name";

/** The metadata fields the API server sets (or manages) rather than the author. */
const SERVER_METADATA_FIELDS = [
  "resourceVersion",
  "uid",
  "generation",
  "creationTimestamp",
  "managedFields",
  "selfLink",
] as const;

/** Options of {@link normalizeObject}. */
export interface NormalizeOptions {
  /**
   * Keeps `metadata.creationTimestamp` (default false). The projector uses it
   * to break precedence ties between routes; a directory has none unless a
   * manifest sets it, so comparisons between the two sources drop it.
   */
  readonly keepCreationTimestamp?: boolean;
}

/**
 * Returns a deep copy of `object` without what the API server adds to what
 * its author wrote: the server-set metadata (`resourceVersion`, `uid`,
 * `generation`, `creationTimestamp`, `managedFields`, `selfLink`), the
 * `status`, the `kubectl apply` annotation and the Namespace name label (when
 * it equals the name). Empty `labels` or `annotations` left behind are
 * removed. Two sources holding the same manifests give equal normalised
 * objects; this is for comparing, the sources themselves return objects as read.
 */
export function normalizeObject(object: KubeObject, options: NormalizeOptions = {}): KubeObject {
  const copy = structuredClone(object) as KubeObject & Record<string, unknown>;
  delete copy.status;
  const metadata = copy.metadata as Record<string, unknown> | undefined;
  if (metadata === undefined || metadata === null || typeof metadata !== "object") return copy;
  for (const field of SERVER_METADATA_FIELDS) {
    if (field === "creationTimestamp" && options.keepCreationTimestamp === true) continue;
    delete metadata[field];
  }
  const annotations = metadata.annotations as Record<string, unknown> | undefined;
  if (annotations !== undefined && annotations !== null && typeof annotations === "object") {
    delete annotations[LAST_APPLIED_ANNOTATION];
    if (Object.keys(annotations).length === 0) delete metadata.annotations;
  }
  const labels = metadata.labels as Record<string, unknown> | undefined;
  if (labels !== undefined && labels !== null && typeof labels === "object") {
    if (copy.kind === "Namespace" && labels[NAMESPACE_NAME_LABEL] === metadata.name) {
      delete labels[NAMESPACE_NAME_LABEL];
    }
    if (Object.keys(labels).length === 0) delete metadata.labels;
  }
  return copy;
}

/** The sort key of an object: apiVersion, kind, namespace, name (missing parts as ""). */
function sortKey(object: KubeObject): readonly string[] {
  const metadata = object.metadata ?? {};
  return [
    object.apiVersion ?? "",
    object.kind ?? "",
    metadata.namespace ?? "",
    metadata.name ?? "",
  ];
}

/**
 * Orders objects by apiVersion, then kind, namespace and name, comparing
 * strings by UTF-16 code units (never by locale), for use with `Array.sort`.
 */
export function compareObjects(a: KubeObject, b: KubeObject): number {
  const ka = sortKey(a);
  const kb = sortKey(b);
  for (let i = 0; i < ka.length; i++) {
    const x = ka[i] as string;
    const y = kb[i] as string;
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}

/** Returns a new array of `objects` in the order of {@link compareObjects}. */
export function sortObjects<T extends KubeObject>(objects: Iterable<T>): T[] {
  return [...objects].sort(compareObjects);
}

/** See {@link createSnapshotPublisher}. */
export interface SnapshotPublisher {
  /** The last published snapshot (empty before the first publication). */
  snapshot(): readonly KubeObject[];
  /**
   * Replaces the snapshot. When its content differs from the current one
   * (object by object: the same object, or one with the same JSON),
   * listeners are called on a later turn of the event loop (unless `notify`
   * is false: the first snapshot, which `whenSynced` announces) and true is
   * returned; otherwise nothing happens (the current snapshot, with its
   * objects, is kept) and false is returned.
   */
  publish(objects: readonly KubeObject[], notify?: boolean): boolean;
  /** Registers a listener; returns a function that unregisters it. */
  onChange(listener: () => void): () => void;
  /** Drops every listener and any pending notification. */
  close(): void;
}

/**
 * Creates the change publisher of an object source: it holds the current
 * snapshot, compares each new one with it by content, and calls listeners
 * (never synchronously, each guarded so that one throwing does not stop the
 * others; the error is logged) only when something changed after the first
 * snapshot.
 */
export function createSnapshotPublisher(logger: Logger, source: string): SnapshotPublisher {
  let current: readonly KubeObject[] = Object.freeze([]);
  const listeners = new Set<() => void>();
  let pending: NodeJS.Immediate | undefined;

  const callListeners = () => {
    pending = undefined;
    for (const listener of [...listeners]) {
      try {
        listener();
      } catch (error) {
        logger.error({ err: error, source }, "an object source change listener threw");
      }
    }
  };

  return {
    snapshot: () => current,
    publish(objects, notify = true) {
      if (sameObjects(current, objects)) return false;
      current = Object.freeze([...objects]);
      if (notify) pending ??= setImmediate(callListeners);
      return true;
    },
    onChange(listener) {
      const entry = () => listener();
      listeners.add(entry);
      return () => {
        listeners.delete(entry);
      };
    },
    close() {
      listeners.clear();
      if (pending !== undefined) clearImmediate(pending);
      pending = undefined;
    },
  };
}

/**
 * Reports whether two snapshots hold the same content in the same order:
 * each pair of objects is the same object or has the same JSON. Only the
 * objects that are not the same are serialised, so comparing a snapshot with
 * one that differs in a file or two costs little.
 */
function sameObjects(a: readonly KubeObject[], b: readonly KubeObject[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    if (a[i] !== b[i] && JSON.stringify(a[i]) !== JSON.stringify(b[i])) return false;
  }
  return true;
}

/**
 * Returns the problems whose `where` and `message` are not in `before`, for
 * logging each problem once when it appears rather than on every rescan.
 */
export function newProblems<T extends { readonly where: string; readonly message: string }>(
  before: readonly T[],
  after: readonly T[],
): T[] {
  const seen = new Set(before.map((p) => `${p.where}\n${p.message}`));
  return after.filter((p) => !seen.has(`${p.where}\n${p.message}`));
}

/** What a source supplies to {@link assembleObjectSource}. */
export interface SourceParts {
  /** The source's name, for example `dir:/etc/aether/routes`. */
  readonly name: string;
  /** The source's logger. */
  readonly logger: Logger;
  /** Holds the snapshot and tells listeners. */
  readonly publisher: SnapshotPublisher;
  /** Opened by the source after its first snapshot. */
  readonly gate: SyncGate;
  /** Starts reading and following changes; a rejection fails `whenSynced`. */
  run(): Promise<void>;
  /** Records why `run` failed (the error's message), to be shown by `problems`. */
  failed(message: string): void;
  /** Stops watchers, timers and requests; called once, by the first `stop()`. */
  release(): Promise<void>;
  /** The problems in force. */
  problems(): readonly SourceProblem[];
}

/**
 * Builds the {@link ObjectSource} life cycle around a source's parts:
 * `start()` runs them once (and throws after `stop()`), a failure of `run`
 * is logged, recorded and fails `whenSynced` with an error naming the
 * source, and `stop()` silences listeners, fails a pending `whenSynced` and
 * releases the parts.
 */
export function assembleObjectSource(parts: SourceParts): ObjectSource {
  const { name, logger, publisher, gate } = parts;
  let started = false;
  let stopped = false;
  return {
    name,
    get synced() {
      return gate.synced;
    },
    start() {
      if (stopped) throw new Error(`${name} was stopped and cannot be started again`);
      if (started) return;
      started = true;
      parts.run().catch((error: unknown) => {
        const message = error instanceof Error ? error.message : String(error);
        const failure = new Error(`${name}: ${message}`, { cause: error });
        logger.error({ err: failure }, "the object source cannot start");
        parts.failed(message);
        gate.fail(failure);
      });
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      publisher.close();
      gate.fail(new Error(`${name} was stopped before its first snapshot was read`));
      await parts.release();
    },
    whenSynced: () => gate.wait(),
    snapshot: () => publisher.snapshot(),
    onChange: (listener) => publisher.onChange(listener),
    problems: () => parts.problems(),
  };
}
