/**
 * Where the export controller (and later the agent's local routes) read
 * Gateway API objects from: a directory of manifests or the Kubernetes API.
 * Both give the same thing, a full snapshot of the objects they hold, and say
 * when it changes.
 */
import type { KubeObject } from "../common/kube-object.js";

/** A problem a source hit while reading its input (kept until the input is fixed). */
export interface SourceProblem {
  /** Where: a file path (with line) or an API resource. */
  readonly where: string;
  /** What went wrong, as a sentence. */
  readonly message: string;
}

/** A source of Kubernetes objects. */
export interface ObjectSource {
  /** A description for logs, for example `dir:/etc/aether/routes` or `kubernetes`. */
  readonly name: string;
  /** True once the first complete snapshot has been read. */
  readonly synced: boolean;
  /** Starts reading (and following changes). Idempotent. */
  start(): void;
  /** Stops following changes and releases watchers and connections. */
  stop(): Promise<void>;
  /** Resolves once the first complete snapshot has been read; rejects if stopped first. */
  whenSynced(): Promise<void>;
  /**
   * The current snapshot: every object the source holds, in a stable order
   * (by file then document, or by kind/namespace/name). Empty before the first sync.
   */
  snapshot(): readonly KubeObject[];
  /**
   * Registers a listener called (debounced, never synchronously inside
   * `start`) after the snapshot changed; returns a function that unregisters it.
   */
  onChange(listener: () => void): () => void;
  /** The problems currently in force (unparsable files, failed watches). */
  problems(): readonly SourceProblem[];
}
