/**
 * The informer life cycle of one kind of the Kubernetes source: a fresh
 * `ListWatch` (with the hooked Watch of `kube-watch.ts` and plain JSON lists
 * of `kube-list.ts`), and what follows its reports (see `stepKind`).
 *
 * - A 410 (the `Expired` ERROR event, or an HTTP 410) makes the informer
 *   itself re-list. Any other failure (a dropped connection, a refused one,
 *   an HTTP error) stops the informer for good after one `error` event; it
 *   is restarted with exponential backoff (it resumes watching from its last
 *   resourceVersion).
 * - A 404 (a CRD that is not installed) makes the kind empty and a problem;
 *   a fresh informer tries again every `missingRetryMs`.
 * - A list in flight is registered in `listAborts`, so that stopping the
 *   source (which the informer does not handle) aborts it.
 */
import type { KubeConfig, KubernetesListObject, KubernetesObject } from "@kubernetes/client-node";
import { createBackoff } from "../runtime/backoff.js";
import type { Logger } from "../runtime/logger.js";
import {
  adoptObject,
  type KindEvent,
  type KindState,
  type KindStep,
  stepKind,
} from "./kube-kind.js";
import { KubeApiError, kubeGetJson } from "./kube-list.js";
import type { ClientModule, HookedWatchClass } from "./kube-watch.js";

/** What the informers of a started source share. */
export interface InformerContext {
  /** The loaded client-node module. */
  readonly client: ClientModule;
  /** The client configuration (the cluster and credentials). */
  readonly config: KubeConfig;
  /** The Watch class of the informers (see `defineHookedWatch`). */
  readonly HookedWatch: HookedWatchClass;
  /** Where progress and problems are logged. */
  readonly logger: Logger;
  /** The first delay between watches that end at once, doubled each time. */
  readonly initialDelayMs: number;
  /** The largest delay between watches that end at once. */
  readonly maxDelayMs: number;
  /** How often a resource the server does not serve is tried again. */
  readonly missingRetryMs: number;
  /** The lists in flight; the source aborts them when it stops. */
  readonly listAborts: Set<AbortController>;
  /** True once the source stopped: nothing starts any more, and reports are ignored. */
  stopped(): boolean;
  /** Waits `ms`, or less when the source stops. */
  sleep(ms: number): Promise<void>;
  /** The snapshot may have changed: publish it (debounced). */
  changed(): void;
  /** A kind has listed (or was found missing): the source may be synced now. */
  checkSynced(): void;
}

/** The HTTP status of an error from a list or a watch, when it has one. */
function statusCodeOf(error: unknown): number | undefined {
  const candidate = error as { statusCode?: unknown; code?: unknown } | undefined;
  if (typeof candidate?.statusCode === "number") return candidate.statusCode;
  return typeof candidate?.code === "number" ? candidate.code : undefined;
}

/** A readable sentence from any error. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** Applies `event` to `kind` (see {@link stepKind}): its new status, the backoff, the log. */
function applyEvent(context: InformerContext, kind: KindState, event: KindEvent): KindStep {
  const step = stepKind(kind, context.missingRetryMs, kind, event);
  kind.listed = step.status.listed;
  kind.missing = step.status.missing;
  kind.problem = step.status.problem;
  if (step.resetBackoff) kind.backoff.reset();
  const resource = kind.where;
  if (step.note === "not-served") {
    context.logger.warn(
      { resource },
      `the API server does not serve ${kind.resource.plural}; treating it as empty`,
    );
  } else if (step.note === "served-again") {
    context.logger.info({ resource }, "the API server serves the resource now");
  } else if (step.note === "watching-again") {
    context.logger.info({ resource }, "watching again");
  }
  return step;
}

/** Lists a kind as plain JSON (the informer's list function). */
async function listKind(context: InformerContext, kind: KindState) {
  const controller = new AbortController();
  context.listAborts.add(controller);
  try {
    const query = { fieldSelector: kind.fieldSelector };
    const body = (await kubeGetJson(context.config, kind.path, query, controller.signal)) as {
      metadata?: { resourceVersion?: string };
      items?: unknown;
    };
    if (!Array.isArray(body?.items)) {
      throw new KubeApiError(`GET ${kind.path}: the answer has no items list`);
    }
    context.logger.debug({ resource: kind.where, items: body.items.length }, "listed");
    return {
      ...body,
      items: body.items.map((item) => adoptObject(kind, item)),
    } as KubernetesListObject<KubernetesObject>;
  } finally {
    context.listAborts.delete(controller);
  }
}

/**
 * Restarts `kind`'s informer after `delayMs`: a fresh one (empty cache) when
 * `fresh` or when it has none, otherwise the stopped one again (it resumes
 * from its last resourceVersion). Replaces a retry already scheduled.
 */
function scheduleRetry(
  context: InformerContext,
  kind: KindState,
  delayMs: number,
  fresh: boolean,
): void {
  if (kind.retryTimer !== undefined) clearTimeout(kind.retryTimer);
  kind.retryTimer = setTimeout(() => {
    kind.retryTimer = undefined;
    if (context.stopped()) return;
    if (fresh || kind.informer === undefined) startInformer(context, kind);
    else
      kind.informer
        .start()
        .catch((error: unknown) => onError(context, kind, kind.generation, error));
  }, delayMs);
}

/** Handles the informer's `error` event, after which it has stopped. */
function onError(
  context: InformerContext,
  kind: KindState,
  generation: number,
  error: unknown,
): void {
  if (context.stopped() || generation !== kind.generation) return;
  if (statusCodeOf(error) === 404) {
    applyEvent(context, kind, { type: "not-served" });
    const old = kind.informer;
    kind.informer = undefined;
    kind.generation++;
    old?.stop().catch(() => {});
    scheduleRetry(context, kind, context.missingRetryMs, true);
    context.checkSynced();
    context.changed();
    return;
  }
  const delayMs = Math.round(kind.backoff.next());
  applyEvent(context, kind, { type: "failed", message: messageOf(error) });
  context.logger.warn(
    {
      resource: kind.where,
      attempt: kind.backoff.attempts,
      retryInMs: delayMs,
      err: messageOf(error),
    },
    "list or watch failed; retrying",
  );
  scheduleRetry(context, kind, delayMs, false);
}

/**
 * Creates and starts a fresh informer for `kind` (its cache starts empty),
 * replacing the one it had: the old one's reports are ignored from now on.
 * Its changes are published (debounced), its failures handled as the module
 * comment says.
 */
export function startInformer(context: InformerContext, kind: KindState): void {
  const { config, logger } = context;
  const generation = ++kind.generation;
  const active = () => !context.stopped() && kind.generation === generation;
  const watch = new context.HookedWatch(config, {
    active,
    listed() {
      const step = applyEvent(context, kind, { type: "listed" });
      if (step.changed) context.changed();
      context.checkSynced();
    },
    connected() {
      applyEvent(context, kind, { type: "connected" });
    },
    errorEvent(code) {
      if (code === 410) logger.info({ resource: kind.where }, "watch expired (410); re-listing");
      else logger.warn({ resource: kind.where, code }, "ERROR event on the watch; watching again");
    },
    adopt: (object) => adoptObject(kind, object),
    quickEnds: createBackoff({ initialMs: context.initialDelayMs, maxMs: context.maxDelayMs }),
    sleep: context.sleep,
  });
  const informer = new context.client.ListWatch<KubernetesObject>(
    kind.path,
    watch,
    () => listKind(context, kind),
    false,
    undefined,
    kind.fieldSelector,
  );
  const changed = () => {
    if (active()) context.changed();
  };
  informer.on("add", changed);
  informer.on("update", changed);
  informer.on("delete", changed);
  informer.on("error", (error) => onError(context, kind, generation, error));
  kind.informer = informer;
  informer.start().catch((error: unknown) => onError(context, kind, generation, error));
}
