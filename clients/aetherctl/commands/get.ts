/**
 * `aetherctl get NS/SVC`: one service's projection (the effective winner, or
 * `--origin`'s) as a tree, or as proto JSON with a `signatureCheck` field,
 * its signature reported (checked with `--origin-keys` when given). A service
 * without one is NotFound (exit 1). `aetherctl get @mesh` is the mesh record
 * (the origin's MeshConfig), printed as its defaults in words.
 */
import { toJson } from "@bufbuild/protobuf";
import { Code, ConnectError } from "@connectrpc/connect";
import { ServiceConfigProjectionSchema } from "../../../gen/aether/registry/v1/projection_pb.js";
import { isMeshRecord } from "../../../services/common/service-name.js";
import type { GetCommand } from "../aetherctl-flags.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { formatMeshRecord } from "../mesh-defaults-describe.js";
import { formatProjectionTree } from "../projection-tree.js";
import { findProjection, viewName } from "../registrar-client.js";
import { reportSignature, signatureJson } from "../signature-report.js";

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
  const signature = reportSignature(projection, context.signatures);
  if (context.global.output === "json") {
    // The proto JSON's own fields stay as they were; the check is one more field.
    const json = {
      ...(toJson(ServiceConfigProjectionSchema, projection) as object),
      signatureCheck: signatureJson(signature),
    };
    context.stdout(`${JSON.stringify(json, null, 2)}\n`);
  } else {
    const format = isMeshRecord(command.service) ? formatMeshRecord : formatProjectionTree;
    context.stdout(format(projection, context.now(), signature));
  }
  return 0;
}
