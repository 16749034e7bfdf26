/**
 * A one-shot readiness gate: the promise behind a source's `whenSynced()`,
 * opened once (the first complete snapshot was read) or failed once (it never
 * will be). Shared by every object source.
 */

/** See {@link createSyncGate}. */
export interface SyncGate {
  /** True once {@link SyncGate.open} was called. */
  readonly synced: boolean;
  /** Resolves when opened, rejects when failed first. */
  wait(): Promise<void>;
  /** Marks the first snapshot as read (later calls do nothing). */
  open(): void;
  /** Fails the wait unless already opened (later calls do nothing). */
  fail(error: Error): void;
}

/**
 * Creates the gate behind `whenSynced`: one promise, opened once or failed
 * once. A failure nobody waits for is not an unhandled rejection.
 */
export function createSyncGate(): SyncGate {
  let settled = false;
  let synced = false;
  let resolve: () => void = () => {};
  let reject: (error: Error) => void = () => {};
  const promise = new Promise<void>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  promise.catch(() => {});
  return {
    get synced() {
      return synced;
    },
    wait: () => promise,
    open() {
      if (settled) return;
      settled = true;
      synced = true;
      resolve();
    },
    fail(error) {
      if (settled) return;
      settled = true;
      reject(error);
    },
  };
}
