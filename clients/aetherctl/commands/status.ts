/**
 * `aetherctl status`: the registrar's GetConfigStatus as a report, or as
 * proto JSON (default values included, so scripts find every field). With
 * `--fail-on-rejections` it exits 3 when the report lists import rejections,
 * rejected routes or source problems.
 */
import { toJsonString } from "@bufbuild/protobuf";
import { GetConfigStatusResponseSchema } from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { StatusCommand } from "../aetherctl-flags.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { countStatusProblems, formatStatus } from "../status-format.js";

/** The exit code of `status --fail-on-rejections` when there are problems. */
export const EXIT_PROBLEMS = 3;

/** Runs `aetherctl status`; resolves with the exit code. */
export async function runStatus(context: CommandContext, command: StatusCommand): Promise<number> {
  const status = await context.client.getConfigStatus({}, unaryCallOptions(context));
  context.stdout(
    context.global.output === "json"
      ? `${toJsonString(GetConfigStatusResponseSchema, status, { prettySpaces: 2, alwaysEmitImplicit: true })}\n`
      : formatStatus(status, context.now(), { color: context.color }),
  );
  const problems = countStatusProblems(status);
  if (command.failOnRejections && problems > 0) {
    context.stderr(
      `aetherctl: ${problems} problem(s): rejected projections, rejected routes or source problems\n`,
    );
    return EXIT_PROBLEMS;
  }
  return 0;
}
