/**
 * Waiting for a condition over the workers' reports without polling: the
 * condition is checked again each time a report arrives.
 */

/**
 * Resolves once `done()` holds, checking it now and then each time the
 * check that `listen` is given is called (`listen(undefined)` when
 * settled); rejects with `failure()` after `timeoutMs`.
 */
export async function awaitChange(
  done: () => boolean,
  listen: (check: (() => void) | undefined) => void,
  timeoutMs: number,
  failure: () => Error,
): Promise<void> {
  if (done()) return;
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => {
      listen(undefined);
      fail(failure());
    }, timeoutMs);
    listen(() => {
      if (!done()) return;
      clearTimeout(timer);
      listen(undefined);
      ok();
    });
  });
}
