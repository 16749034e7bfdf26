/**
 * The status writer's one I/O step: a JSON merge PATCH of an object's
 * status subresource through the API server the Kubernetes source reads,
 * with the same client configuration (the same kubeconfig, or in-cluster
 * service account). client-node is loaded on the first patch, not on import.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import { kubePatchJson } from "./kube-list.js";
import { loadKubeConfig } from "./kubernetes-source.js";

/** Options of {@link createKubeStatusPatcher}. */
export interface KubeStatusPatcherOptions {
  /** The kubeconfig the source uses (`--kubeconfig`); default as the source's. */
  readonly kubeconfig?: string;
  /** A ready client configuration (tests); wins over `kubeconfig`. */
  readonly kubeConfig?: KubeConfig;
  /** How long one PATCH may take, in milliseconds (default 10000). */
  readonly timeoutMs?: number;
}

/**
 * PATCHes `path` (a `.../status` path) with the merge patch `body`. Rejects
 * with the API server's error (a `KubeApiError`: 404, 409 Conflict on a stale
 * resourceVersion precondition, 403 without RBAC) or a timeout.
 */
export type StatusPatcher = (path: string, body: unknown) => Promise<void>;

/**
 * Creates a patcher over the Kubernetes source's client configuration. The
 * configuration is loaded at the first call; a configuration that cannot be
 * loaded fails every call with the same clear error.
 */
export function createKubeStatusPatcher(options: KubeStatusPatcherOptions = {}): StatusPatcher {
  let config: Promise<KubeConfig> | undefined;
  const timeoutMs = options.timeoutMs ?? 10_000;
  return async (path, body) => {
    config ??=
      options.kubeConfig !== undefined
        ? Promise.resolve(options.kubeConfig)
        : import("@kubernetes/client-node").then((client) =>
            loadKubeConfig(client, options.kubeconfig),
          );
    await kubePatchJson(await config, path, body, AbortSignal.timeout(timeoutMs));
  };
}
