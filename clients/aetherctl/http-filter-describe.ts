/**
 * HTTP filters (the projection's `http_filters`) in words, for `aetherctl
 * get` and `aetherctl explain`: the filter, its phase and priority, and its
 * extension in one line. Pure.
 */
import type { Duration } from "@bufbuild/protobuf/wkt";
import {
  ExtensionFailureMode,
  type HttpFilter,
  HttpFilterPhase,
  WasmPullPolicy,
} from "../../gen/aether/registry/v1/projection_pb.js";
import { backendAddress, describeHeaderModifier } from "./projection-describe.js";
import { formatMillis } from "./time-format.js";

const PHASES: Readonly<Record<number, string>> = {
  [HttpFilterPhase.AUTHN]: "AuthN",
  [HttpFilterPhase.AUTHZ]: "AuthZ",
  [HttpFilterPhase.STATS]: "Stats",
  [HttpFilterPhase.DEFAULT]: "Default",
};

/** The phase as the HTTPFilter CRD spells it (`AuthN`, …), `unspecified` when unset. */
function phaseName(phase: HttpFilterPhase): string {
  return PHASES[phase] ?? "unspecified";
}

/** `shop/checkout-headers (Default, priority 10)`. */
export function httpFilterHeading(filter: HttpFilter): string {
  return `${filter.namespace}/${filter.name} (${phaseName(filter.phase)}, priority ${filter.priority})`;
}

function millis(duration: Duration | undefined): string {
  if (duration === undefined) return "default timeout";
  const ms = Number(duration.seconds) * 1000 + Math.round(duration.nanos / 1e6);
  return `timeout ${formatMillis(ms)}`;
}

function failure(mode: ExtensionFailureMode): string {
  return mode === ExtensionFailureMode.ALLOW ? "fail open" : "fail closed";
}

/**
 * Describes a filter's extension in one line, for example `ext_authz
 * security/authz:9000, timeout 250ms, fail closed` or `wasm oci://r/f:1
 * sha256 0123456789ab…, config 34 bytes`.
 */
export function describeExtension(filter: HttpFilter): string {
  const e = filter.extension;
  switch (e.case) {
    case "lua": {
      const lines = e.value.source.split("\n").length;
      return `lua (${lines} ${lines === 1 ? "line" : "lines"})`;
    }
    case "wasm": {
      const w = e.value;
      const parts = [
        `wasm ${w.url} sha256 ${w.sha256.slice(0, 12)}…`,
        w.pluginConfigJson === "" ? "" : `config ${w.pluginConfigJson.length} bytes`,
        w.pullPolicy === WasmPullPolicy.ALWAYS
          ? "pull always"
          : w.pullPolicy === WasmPullPolicy.IF_NOT_PRESENT
            ? "pull if not present"
            : "",
      ];
      return parts.filter((p) => p !== "").join(", ");
    }
    case "extProc":
    case "extAuthz": {
      const x = e.value;
      const name = e.case === "extProc" ? "ext_proc" : "ext_authz";
      const backend = x.backend === undefined ? "(none)" : backendAddress(x.backend);
      return `${name} ${backend}, ${millis(x.timeout)}, ${failure(x.failureMode)}`;
    }
    case "headerMutation": {
      const { request, response } = e.value;
      const parts = [
        request === undefined ? "" : `request: ${describeHeaderModifier(request)}`,
        response === undefined ? "" : `response: ${describeHeaderModifier(response)}`,
      ].filter((p) => p !== "");
      return `headers ${parts.join("; ") || "(no change)"}`;
    }
    default:
      return "(no extension)";
  }
}
