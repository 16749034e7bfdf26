/**
 * The error aetherctl throws for a command line it cannot run: an unknown
 * command or flag, a missing argument, a malformed value. `main` prints its
 * message with the usage text and exits 2.
 */

/** A command line aetherctl cannot run; its message names the problem. */
export class UsageError extends Error {
  override readonly name = "UsageError";

  /**
   * Creates the error. `command` is the command whose usage text should be
   * shown with it, or undefined for the general usage.
   */
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}
