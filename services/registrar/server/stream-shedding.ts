/**
 * The bound on HTTP/2 streams open at once over every connection
 * (`--max-open-streams`), decided here and applied by `session-upkeep.ts` at
 * each of its ticks.
 *
 * Every other budget (bodies arriving, calls answered, watch streams) refuses
 * a stream by answering it, and an answered stream is let go only once its
 * answer, or the reset that follows it, reaches the socket. A peer that never
 * reads keeps every stream it opened: a hostile bench connection held its 100
 * streams, each ~7 KiB of heap and some native memory, until its PING timed
 * out (up to 50 s), and 4,096 such connections could hold 409,600. Only
 * ending a session frees its streams without writing to it.
 *
 * So while more streams than the bound are open, sessions are ended, those
 * that have *held* the most streams first: a session's held streams are the
 * fewest it had open at this tick and the two before, so streams that close
 * within a tick or two (a reading peer's refused streams, reset a second
 * after their answer) never count, and a peer that reads is not cut off and
 * made to reconnect in a loop. An agent holds one stream and is never ended
 * here (a session must hold two or more). Pure and synchronous.
 */

/** A session's streams, as the shell samples them at a tick. */
export interface SessionStreams<S> {
  /** The session. */
  readonly session: S;
  /** Its streams open now. */
  readonly open: number;
  /** The fewest it had open at this tick and the two before. */
  readonly held: number;
}

/**
 * The sessions to end so that no more than `max` streams stay open, when
 * `total` are: the ones that held the most first (the first listed among
 * equals: the shell lists the oldest first), each taking its open streams
 * off the total, until the total is within the bound or no session left
 * holds two or more. Empty within the bound.
 */
export function sessionsToShed<S>(
  total: number,
  max: number,
  sessions: readonly SessionStreams<S>[],
): S[] {
  if (total <= max) return [];
  const heaviestFirst = sessions
    .map((s, order) => ({ s, order }))
    .filter(({ s }) => s.held >= 2)
    .sort((a, b) => b.s.held - a.s.held || a.order - b.order);
  const shed: S[] = [];
  let left = total;
  for (const { s } of heaviestFirst) {
    if (left <= max) break;
    shed.push(s.session);
    left -= s.open;
  }
  return shed;
}
