/**
 * Bounded concurrency for a lazy sequence of tasks: the export controller
 * writes its batches through it, so that the next batch is made (and its
 * content encoded) only when a writer is free.
 */

/**
 * Runs `tasks` with at most `limit` in flight, taking each task from the
 * iterable only when a runner is free. On the first failure no new task
 * starts; the ones in flight finish, then it rejects with that failure.
 */
export async function runLimited(
  tasks: Iterable<() => Promise<void>>,
  limit: number,
): Promise<void> {
  const iterator = tasks[Symbol.iterator]();
  let failure: { error: unknown } | undefined;
  const runner = async (): Promise<void> => {
    while (failure === undefined) {
      try {
        const next = iterator.next();
        if (next.done === true) return;
        await next.value();
      } catch (error) {
        failure ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: limit }, runner));
  if (failure !== undefined) throw failure.error;
}
