/**
 * `aetherctl get NS/SVC`: one service's projection (the effective winner, or
 * `--origin`'s) as a tree, or as proto JSON. A service without one is
 * NotFound (exit 1).
 */
import { toJsonString } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ServiceConfigProjectionSchema } from "../../../gen/aether/registry/v1/projection_pb.js";
import type { GetCommand } from "../aetherctl-flags.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { formatProjectionTree } from "../projection-tree.js";
import { findProjection, viewName } from "../registrar-client.js";

/** Runs `aetherctl get`; resolves with the exit code. */
export async function runGet(context: CommandContext, command: GetCommand): Promise<number> {
  const projection = await findProjection(
    context.client,
    command.service,
    command.origin,
    unaryCallOptions(context),
  );
  if (projection === undefined) {
    throw new ConnectError(
      `no projection of ${command.service} in the ${viewName(command.origin)}`,
      Code.NotFound,
    );
  }
  context.stdout(
    context.global.output === "json"
      ? `${toJsonString(ServiceConfigProjectionSchema, projection, { prettySpaces: 2 })}\n`
      : formatProjectionTree(projection, context.now()),
  );
  return 0;
}
