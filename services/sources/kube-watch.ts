/**
 * The Watch the Kubernetes source's informers use: client-node's `Watch`
 * (of client-node 1.4.0), plus what its informer leaves to its caller:
 * bookmarks (`allowWatchBookmarks`, which the informer does not send), a
 * server-side `timeoutSeconds` with a client-side deadline past it that
 * aborts a silently dead connection, backoff between watches that end at
 * once (which the informer would otherwise retry in a hot loop), and hooks
 * that tell the source what happened.
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { Backoff } from "../runtime/backoff.js";

/** The client-node module, loaded on start. */
export type ClientModule = typeof import("@kubernetes/client-node");

/** What a kind's watch tells the source about. */
export interface WatchHooks {
  /** False once the source stopped or replaced this informer. */
  active(): boolean;
  /** The informer applied a list (or resumes a watch): the kind has data. */
  listed(): void;
  /** A watch request was answered with 200. */
  connected(): void;
  /** An ERROR event arrived on the stream (with code 410, the informer re-lists). */
  errorEvent(code: unknown): void;
  /** Fixes up an object as received (fills apiVersion and kind, drops managedFields). */
  adopt(object: unknown): unknown;
  /** The delays between watches that end at once (reset by one that lasts). */
  readonly quickEnds: Backoff;
  /** Waits `ms`, or less when the source stops. */
  sleep(ms: number): Promise<void>;
}

/** How long a watch must last not to count as ending "at once". */
const SHORT_WATCH_MS = 1_000;

/** The class {@link defineHookedWatch} returns: `new HookedWatch(config, hooks)`. */
export type HookedWatchClass = ReturnType<typeof defineHookedWatch>;

/**
 * Defines the Watch the informers use: client-node's, plus bookmarks, a
 * watch timeout (`timeoutSeconds`, and a client-side deadline 30 s past it),
 * backoff between watches that end at once, and the hooks above. Each
 * informer gets its own instance, with its own hooks.
 */
export function defineHookedWatch(client: ClientModule, timeoutSeconds: number) {
  return class HookedWatch extends client.Watch {
    private endedAtOnce = false;

    /** Creates a watch for one informer. */
    constructor(
      config: KubeConfig,
      private readonly hooks: WatchHooks,
    ) {
      super(config);
    }

    /** Starts a watch request like client-node's, with the additions above. */
    override async watch(
      path: string,
      queryParams: Record<string, string | number | boolean | undefined>,
      callback: (phase: string, apiObj: unknown, watchObj?: unknown) => void,
      done: (err: unknown) => void,
    ): Promise<AbortController> {
      const hooks = this.hooks;
      if (hooks.active()) hooks.listed();
      if (this.endedAtOnce) await hooks.sleep(hooks.quickEnds.next());
      else hooks.quickEnds.reset();
      if (!hooks.active()) {
        done(null);
        return new AbortController();
      }
      const startedAt = Date.now();
      let ended = false;
      let deadline: NodeJS.Timeout | undefined;
      const onDone = (err: unknown) => {
        if (ended) return;
        ended = true;
        clearTimeout(deadline);
        // Failures have their own backoff (the source restarts the informer).
        this.endedAtOnce = err === null && Date.now() - startedAt < SHORT_WATCH_MS;
        done(err);
      };
      const onEvent = (phase: string, object: unknown, raw?: unknown) => {
        if (!hooks.active()) return;
        if (phase === "ERROR") hooks.errorEvent((object as { code?: unknown } | undefined)?.code);
        callback(
          phase,
          phase === "ERROR" || phase === "BOOKMARK" ? object : hooks.adopt(object),
          raw,
        );
      };
      const params = { ...queryParams, allowWatchBookmarks: true, timeoutSeconds };
      const controller = await super.watch(path, params, onEvent, onDone);
      if (!hooks.active()) controller.abort();
      else if (!ended) {
        hooks.connected();
        deadline = setTimeout(() => controller.abort(), (timeoutSeconds + 30) * 1_000);
      }
      return controller;
    }
  };
}
