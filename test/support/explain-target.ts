/** The explain target most aetherctl tests evaluate: a plain HTTP request from namespace `web`. */
import { buildExplainTarget, type ExplainTarget } from "../../clients/aetherctl/explain-request.js";

/**
 * What `aetherctl explain --from-namespace web POSITIONALS` (with `-H` for
 * each of `headers`, no --port, --port-name or --grpc) evaluates.
 */
export function explainTargetFromWeb(
  positionals: readonly string[],
  headers: readonly string[] = [],
): ExplainTarget {
  return buildExplainTarget({
    positionals: [...positionals],
    fromNamespace: "web",
    port: undefined,
    portName: undefined,
    headers: [...headers],
    grpc: undefined,
  });
}
