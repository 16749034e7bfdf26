/**
 * The agents `aetherctl dashboard --agent NAME=URL` reads route tables from,
 * pure so it is table-tested: the flag's values → a map of name → base URL
 * (usage errors for a bad name, a bad URL, a repeated name), and a request
 * target → what it asks of them (`GET /agents`: the names; `GET
 * /agents/NAME/routes`: that agent's route table).
 */
import { checkClusterName } from "../../../services/common/service-name.js";
import { UsageError } from "../../../services/process/usage-error.js";
import type { Refusal } from "./request-checks.js";

/** The path of the agents' list; their route tables are under it. */
export const AGENTS_PATH = "/agents";

/** The largest route table the dashboard passes on (an agent with 1,000 services writes ~2 MiB). */
export const AGENT_TABLE_MAX_BYTES = 16 * 1024 * 1024;

/** An agent's base URL: http(s), no credentials, query or fragment, no trailing slash. */
function checkAgentBaseUrl(name: string, text: string): string {
  let url: URL | undefined;
  try {
    url = new URL(text);
  } catch {
    url = undefined;
  }
  const problem =
    url === undefined || (url.protocol !== "http:" && url.protocol !== "https:")
      ? "is not an http(s) URL"
      : url.username !== "" || url.password !== ""
        ? "must not carry credentials"
        : url.search !== "" || url.hash !== ""
          ? "must not have a query or fragment"
          : undefined;
  if (problem !== undefined) {
    throw new UsageError(
      `--agent ${name}=${text}: the URL ${problem} (the agent's admin base URL, for example http://127.0.0.1:8081, as explain --agent takes it)`,
      "dashboard",
    );
  }
  return text.replace(/\/+$/, "");
}

/**
 * The `--agent NAME=URL` values (parseArgs' list; undefined when none) as a
 * map of name → the agent's admin base URL without trailing slashes, in the
 * order given. A UsageError when a value has no `=`, the name is not a
 * DNS-1123 label (a cluster's name), the URL is not an http(s) URL without
 * credentials, query or fragment, or a name is given twice.
 */
export function parseAgentFlags(
  values: readonly string[] | undefined,
): ReadonlyMap<string, string> {
  const agents = new Map<string, string>();
  for (const value of values ?? []) {
    const equals = value.indexOf("=");
    if (equals < 0) {
      throw new UsageError(
        `--agent ${JSON.stringify(value)} must be NAME=URL (for example west=http://127.0.0.1:8081)`,
        "dashboard",
      );
    }
    const name = value.slice(0, equals);
    const problem = checkClusterName(name);
    if (problem !== undefined) throw new UsageError(`--agent ${value}: ${problem}`, "dashboard");
    if (agents.has(name)) {
      throw new UsageError(
        `--agent ${name} is given twice (${agents.get(name)} and ${value.slice(equals + 1)}): each name once`,
        "dashboard",
      );
    }
    agents.set(name, checkAgentBaseUrl(name, value.slice(equals + 1)));
  }
  return agents;
}

/** Whether a request target (path and query) is under {@link AGENTS_PATH}. */
export function isAgentsPath(target: string): boolean {
  const path = target.split("?", 1)[0] as string;
  return path === AGENTS_PATH || path.startsWith(`${AGENTS_PATH}/`);
}

/** What a request under `/agents` asks for, or why it is refused. */
export type AgentsRequest =
  | { readonly kind: "list" }
  | { readonly kind: "routes"; readonly name: string; readonly url: string }
  | { readonly kind: "refused"; readonly refusal: Refusal };

/**
 * What `method` and `target` (under `/agents`; the query is ignored) ask of
 * `agents`: `GET /agents` the list, `GET /agents/NAME/routes` that agent's
 * route table. Refused: another method (405), another path (404), a name
 * the dashboard was not given (404, saying which it has).
 */
export function agentsRequestOf(
  method: string,
  target: string,
  agents: ReadonlyMap<string, string>,
): AgentsRequest {
  if (method !== "GET") {
    return {
      kind: "refused",
      refusal: { status: 405, reason: `${method} is not allowed: GET only` },
    };
  }
  const path = target.split("?", 1)[0] as string;
  if (path === AGENTS_PATH) return { kind: "list" };
  const name = /^\/agents\/([^/]+)\/routes$/.exec(path)?.[1];
  if (name === undefined) return { kind: "refused", refusal: { status: 404, reason: "not found" } };
  const url = agents.get(name);
  if (url === undefined) {
    const known = agents.size === 0 ? "none (see --agent)" : [...agents.keys()].join(", ");
    return {
      kind: "refused",
      refusal: {
        status: 404,
        reason: `no agent named ${JSON.stringify(name)}; the dashboard has ${known}`,
      },
    };
  }
  return { kind: "routes", name, url };
}
