/**
 * `aetherctl list`: every page of the effective view (default), one origin's
 * projections (`--origin`), or every origin's (`--all-origins`), as a table
 * or as proto JSON. The table's SIGNED column is checked with `--origin-keys`.
 */
import { create, toJsonString } from "@bufbuild/protobuf";
import {
  ConfigView,
  ListAllConfigResponseSchema,
  ListConfigResponseSchema,
} from "../../../gen/aether/registry/v1/config_service_pb.js";
import type { ServiceConfigProjection } from "../../../gen/aether/registry/v1/projection_pb.js";
import type { ListCommand } from "../aetherctl-flags.js";
import { type CommandContext, unaryCallOptions } from "../command-context.js";
import { formatListTable } from "../list-format.js";
import { listProjections } from "../registrar-client.js";
import { reportSignature } from "../signature-report.js";

/** Runs `aetherctl list`; resolves with the exit code. */
export async function runList(context: CommandContext, command: ListCommand): Promise<number> {
  const view = command.allOrigins ? ConfigView.ALL_ORIGINS : ConfigView.EFFECTIVE;
  const listing = await listProjections(
    context.client,
    { services: command.services, origin: command.origin, view },
    unaryCallOptions(context),
  );
  if (context.global.output === "json") {
    const schema =
      command.origin === undefined ? ListAllConfigResponseSchema : ListConfigResponseSchema;
    const response = create(schema, listing);
    context.stdout(`${toJsonString(schema, response, { prettySpaces: 2 })}\n`);
  } else {
    const signatureOf = (p: ServiceConfigProjection) => reportSignature(p, context.signatures);
    context.stdout(
      formatListTable(listing.projections, context.now(), signatureOf, { color: context.color }),
    );
  }
  return 0;
}
