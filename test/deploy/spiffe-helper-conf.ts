/**
 * Reads a spiffe-helper configuration (HCL) as deploy/components/mtls-spiffe
 * writes it, so the tests can check that it points where the aether flags
 * read: `key = "string"`, `key = true|false`, `key = 123`, `#` and `//`
 * comments, and one level of blocks (`health_checks { … }`). Anything else
 * throws, naming the line: this is a checker for our file, not an HCL parser.
 */

/** A value of the helper's configuration. */
export type HelperValue = string | number | boolean | { readonly [key: string]: HelperValue };

/** The top-level keys spiffe-helper v0.11.0 knows (cmd/spiffe-helper/config/config.go). */
export const SPIFFE_HELPER_KEYS: ReadonlySet<string> = new Set([
  "add_intermediates_to_bundle",
  "agent_address",
  "cmd",
  "cmd_args",
  "pid_file_name",
  "cert_dir",
  "cert_file_mode",
  "key_file_mode",
  "jwt_bundle_file_mode",
  "jwt_svid_file_mode",
  "include_federated_domains",
  "omit_expired",
  "renew_signal",
  "daemon_mode",
  "health_checks",
  "hint",
  "svid_file_name",
  "svid_key_file_name",
  "svid_bundle_file_name",
  "jwt_svids",
  "jwt_bundle_file_name",
]);

/** The keys of its `health_checks` block (pkg/health/health.go). */
export const SPIFFE_HELPER_HEALTH_KEYS: ReadonlySet<string> = new Set([
  "listener_enabled",
  "bind_port",
  "liveness_path",
  "readiness_path",
]);

/** One `key = value` right-hand side. */
function scalar(text: string, where: string): string | number | boolean {
  const quoted = /^"((?:[^"\\]|\\.)*)"$/.exec(text);
  if (quoted !== null) return JSON.parse(`"${quoted[1]}"`) as string;
  if (text === "true" || text === "false") return text === "true";
  if (/^\d+$/.test(text)) return Number(text);
  throw new Error(`${where}: cannot read the value ${text}`);
}

/** Parses the configuration; duplicate keys and unreadable lines throw. */
export function parseHelperConf(text: string): Record<string, HelperValue> {
  const top: Record<string, HelperValue> = {};
  let block: Record<string, HelperValue> | undefined;
  text.split("\n").forEach((raw, index) => {
    const where = `helper.conf line ${index + 1}`;
    const line = raw.replace(/^\s*(#|\/\/).*$/, "").trim();
    if (line === "") return;
    const into = block ?? top;
    const opens = /^([a-z_]+)\s*\{$/.exec(line);
    const pair = /^([a-z_]+)\s*=\s*(.+)$/.exec(line);
    if (opens !== null && block === undefined) {
      block = {};
      top[opens[1] as string] = block;
    } else if (line === "}" && block !== undefined) {
      block = undefined;
    } else if (pair !== null) {
      const key = pair[1] as string;
      if (key in into) throw new Error(`${where}: ${key} is given twice`);
      into[key] = scalar((pair[2] as string).trim(), where);
    } else {
      throw new Error(`${where}: cannot read ${JSON.stringify(raw)}`);
    }
  });
  if (block !== undefined) throw new Error("helper.conf: a block is not closed");
  return top;
}
