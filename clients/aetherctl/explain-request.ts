/**
 * `aetherctl explain`'s arguments as the shared parser reads them
 * (`services/common/explain-target.ts`, which the console's Explain form
 * uses too), each problem turned into a {@link UsageError} of `explain`
 * (usage text, exit 2).
 */
import {
  buildExplainTarget as buildShared,
  type ExplainArguments,
  ExplainInputError,
  type ExplainTarget,
  isServiceDnsName,
  parseHeaderFlag as parseHeaderShared,
  parseTargetUrl as parseUrlShared,
  serviceOfHost as serviceOfHostShared,
} from "../../services/common/explain-target.js";
import { UsageError } from "../../services/process/usage-error.js";

export type { ExplainArguments, ExplainTarget };
export { isServiceDnsName };

/** Runs `parse`, rethrowing an {@link ExplainInputError} as a UsageError of `explain`. */
function asUsage<A extends unknown[], R>(parse: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    try {
      return parse(...args);
    } catch (error) {
      if (error instanceof ExplainInputError) throw new UsageError(error.message, "explain");
      throw error;
    }
  };
}

/** Parses a `-H` value, `name: value`, into a header pair; a UsageError when malformed. */
export const parseHeaderFlag: (text: string) => [string, string] = asUsage(parseHeaderShared);

/** Parses the target URL (`http://` when it has no scheme); a UsageError when not http(s). */
export const parseTargetUrl: (text: string) => URL = asUsage(parseUrlShared);

/** The service a host name denotes for a caller in a namespace; a UsageError otherwise. */
export const serviceOfHost: (host: string, callerNamespace: string) => string =
  asUsage(serviceOfHostShared);

/** Validates `aetherctl explain`'s arguments and builds what to evaluate; a UsageError when invalid. */
export const buildExplainTarget: (args: ExplainArguments) => ExplainTarget = asUsage(buildShared);
