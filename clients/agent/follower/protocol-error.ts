/** The error the agent raises when a registrar breaks the ConfigService contract. */

/**
 * The registrar broke the WatchConfig or ListAllConfig contract (events out
 * of order, a resume it was not asked for, pages at different revisions).
 * The follower treats it as a failed stream or poll: it keeps its state.
 */
export class ProtocolError extends Error {
  override readonly name = "ProtocolError";
}
