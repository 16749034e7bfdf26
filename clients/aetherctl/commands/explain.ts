/**
 * `aetherctl explain`: fetches the destination service's projection (the
 * effective winner, or `--origin`'s), runs the shared request evaluator on it
 * as the caller's proxy would, and prints the decision, or with `-o json`
 * the evaluator's Decision.
 */
import { evaluate } from "../../../services/common/evaluator.js";
import type { ExplainCommand } from "../aetherctl-flags.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { formatExplanation } from "../explain-format.js";
import { toJsonText } from "../json-output.js";
import { findProjection, viewName } from "../registrar-client.js";

/** Runs `aetherctl explain`; resolves with the exit code. */
export async function runExplain(
  context: CommandContext,
  command: ExplainCommand,
): Promise<number> {
  const { target } = command;
  const projection = await findProjection(
    context.client,
    target.service,
    command.origin,
    unaryCallOptions(context),
  );
  const decision = evaluate({
    projections: projection === undefined ? [] : [projection],
    request: target.request,
    mesh: {
      service: target.service,
      port: target.port,
      callerNamespace: target.callerNamespace,
      ...(target.portName === undefined ? {} : { portName: target.portName }),
    },
    random: command.random.next,
  });
  context.stdout(
    context.global.output === "json"
      ? toJsonText(decision)
      : formatExplanation({
          target,
          projection,
          view: viewName(command.origin),
          decision,
          random: command.random.description,
        }),
  );
  return 0;
}
