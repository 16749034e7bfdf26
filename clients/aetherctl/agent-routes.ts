/**
 * `aetherctl explain --agent` and `aetherctl dashboard --agent`: reading an
 * agent's route table (its `GET /routes` document, parsed by
 * `services/common/agent-route-parse.ts`) instead of a registrar's view, and
 * what `explain` says of the destination's entry. {@link fetchAgentRoutes}
 * does the one HTTP GET.
 */
import { Code, ConnectError } from "@connectrpc/connect";
import { type AgentRouteEntry, parseAgentRoutes } from "../../services/common/agent-route-parse.js";
import type { RouteSource } from "../../services/common/route-merge.js";

/** Where an explanation's projection came from when `--agent` is given. */
export interface AgentLookup {
  /** The agent's base URL. */
  readonly url: string;
  /** The destination's entry; undefined when the agent does not route the service. */
  readonly entry: AgentRouteEntry | undefined;
}

/** The sentence printed when the agent has no entry for the destination. */
export function notRoutedSentence(agentUrl: string, service: string): string {
  return `the agent at ${agentUrl} does not route ${service} (not in its dependency set, or no config for it): requests go to the service itself`;
}

/**
 * The extra field `-o json` adds to the Decision with `--agent`: the agent,
 * and the entry's source, origin and version (all null when the agent does
 * not route the service).
 */
export interface AgentRouteJson {
  readonly agent: string;
  readonly routed: boolean;
  readonly source: RouteSource | null;
  readonly origin: string | null;
  readonly version: string | null;
}

/** The `agentRoute` field of `-o json` with `--agent`. */
export function agentRouteJson(lookup: AgentLookup): AgentRouteJson {
  const { entry } = lookup;
  return {
    agent: lookup.url,
    routed: entry !== undefined,
    source: entry?.source ?? null,
    origin: entry?.origin ?? null,
    version: entry?.version ?? null,
  };
}

/** The default bound on a route table's size (an agent routing 1,000 services writes ~2 MiB). */
export const AGENT_ROUTES_MAX_BYTES = 64 * 1024 * 1024;

/** The body of `response` as text; a ConnectError (resource_exhausted) past `maxBytes`. */
async function readBounded(
  response: Response,
  maxBytes: number,
  agentUrl: string,
): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return "";
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel();
      throw new ConnectError(
        `the agent at ${agentUrl} answered GET /routes with more than ${maxBytes} bytes`,
        Code.ResourceExhausted,
      );
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString("utf8");
}

/** A body as one line of at most 200 characters (for an error message). */
function oneLine(body: string): string {
  const line = body.replace(/\s+/g, " ").trim();
  return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

/**
 * GETs `agentUrl/routes` and parses it. Failures are ConnectErrors (so
 * aetherctl reports them as `aetherctl: <code>: <message>` and exits 1):
 * `unavailable` when the agent cannot be reached, does not answer within
 * `timeoutMs` (the whole body included), or has no route table yet;
 * `resource_exhausted` when the body is longer than `maxBytes` (default
 * {@link AGENT_ROUTES_MAX_BYTES}); `internal` when the answer is not a route
 * table.
 */
export async function fetchAgentRoutes(
  agentUrl: string,
  options: { readonly timeoutMs: number; readonly signal: AbortSignal; readonly maxBytes?: number },
): Promise<AgentRouteEntry[]> {
  const url = `${agentUrl}/routes`;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  let response: Response;
  let body: string;
  try {
    response = await fetch(url, { signal: AbortSignal.any([options.signal, timeout]) });
    body = await readBounded(response, options.maxBytes ?? AGENT_ROUTES_MAX_BYTES, agentUrl);
  } catch (error) {
    if (error instanceof ConnectError) throw error;
    if (timeout.aborted && !options.signal.aborted) {
      throw new ConnectError(
        `the agent at ${agentUrl} did not answer within ${options.timeoutMs} ms; raise --timeout or check the agent`,
        Code.Unavailable,
      );
    }
    const cause = (error as { cause?: { message?: unknown } }).cause;
    const detail = typeof cause?.message === "string" ? cause.message : (error as Error).message;
    throw new ConnectError(
      `cannot reach the agent at ${agentUrl} (${detail}); is it running? (check --agent URL)`,
      Code.Unavailable,
    );
  }
  if (response.status !== 200) {
    throw new ConnectError(
      `the agent at ${agentUrl} answered GET /routes with HTTP ${response.status}: ${oneLine(body)}`,
      response.status === 503 ? Code.Unavailable : Code.Unknown,
    );
  }
  try {
    return parseAgentRoutes(body);
  } catch (error) {
    throw new ConnectError(
      `${url} is not an agent's route table: ${(error as Error).message}`,
      Code.Internal,
    );
  }
}
