/**
 * `aetherctl fleet`: the registrar's GetFleetStatus as a cluster table and a
 * worst-first service table (`fleet-format.ts`), or as proto JSON (default
 * values included, so scripts find every field).
 */
import { toJsonString } from "@bufbuild/protobuf";
import { GetFleetStatusResponseSchema } from "../../../gen/aether/registry/v1/fleet_pb.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import type { FleetCommand } from "../fleet-flags.js";
import { formatFleet } from "../fleet-format.js";

/** Runs `aetherctl fleet`; resolves with the exit code. */
export async function runFleet(context: CommandContext, command: FleetCommand): Promise<number> {
  const response = await context.client.getFleetStatus(
    {
      services: [...command.services],
      clusters: [...command.clusters],
      states: [...command.states],
      limit: command.limit,
    },
    unaryCallOptions(context),
  );
  context.stdout(
    context.global.output === "json"
      ? `${toJsonString(GetFleetStatusResponseSchema, response, { prettySpaces: 2, alwaysEmitImplicit: true })}\n`
      : formatFleet(response, { color: context.color }),
  );
  return 0;
}
