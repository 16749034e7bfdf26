/**
 * The check a listing served from the config cache makes first: that the
 * store answers now. A synced cache holds the store's state at its
 * revision, but it learns that the store froze or went away only at its next
 * failed ping; a list served from it meanwhile would answer as if all were
 * well. So every listing that would have read the store waits for a ping
 * that started after it arrived, and fails with the ping's error
 * (UNAVAILABLE) when the store does not answer, as a store read would have.
 *
 * The pings are coalesced: at most one runs, and every caller that arrives
 * meanwhile waits for the single one that follows it, so however many
 * requests arrive, the store sees at most one ping at a time.
 */

/** Confirms that the store answers; see the module comment. */
export interface StoreBarrier {
  /**
   * Resolves once a ping that started after this call was answered; rejects
   * with that ping's error.
   */
  confirm(): Promise<void>;
}

/** Creates the coalescing barrier over `ping` (the store's, on its health connection). */
export function createStoreBarrier(ping: () => Promise<void>): StoreBarrier {
  let running: Promise<void> | undefined;
  let following: Promise<void> | undefined;
  const ignore = (): void => {};

  const start = (): Promise<void> => {
    const started = ping();
    running = started;
    const clear = () => {
      if (running === started) running = undefined;
    };
    started.then(clear, clear);
    return started;
  };

  return {
    confirm() {
      if (following !== undefined) return following;
      if (running === undefined) return start();
      following = running.then(ignore, ignore).then(() => {
        following = undefined;
        return start();
      });
      return following;
    },
  };
}
