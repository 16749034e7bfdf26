/**
 * The error every command line here (registrar, agent, sandbox, aetherctl,
 * bench) throws when it cannot run what it was given: an unknown command or
 * flag, a missing argument, a malformed value. The entry point prints its
 * message with the usage text and exits 2.
 */

/** A command line that cannot run; its message names the flag or argument and the problem. */
export class UsageError extends Error {
  override readonly name = "UsageError";

  /**
   * Creates the error. `command` is the subcommand whose usage text should be
   * shown with it (aetherctl), or undefined for the program's general usage.
   */
  constructor(
    message: string,
    readonly command?: string,
  ) {
    super(message);
  }
}
