/**
 * `aetherctl dashboard --agent`'s endpoints (after the server's Host and
 * Origin checks): `GET /agents` answers the names given, `{"agents":
 * ["east", "west"]}`; `GET /agents/NAME/routes` reads that agent's `GET
 * /routes` (`fetchAgentRoutes`: the dashboard's `--timeout`, at most
 * {@link AGENT_TABLE_MAX_BYTES}), checks it is a route table and answers it
 * again in the agent's own document shape (`agentRoutesToJson`), or 502
 * with a one-line reason when the agent cannot be reached or answers
 * something else. Thin: the decisions are `dashboard-agents.ts`'.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import { ConnectError } from "@connectrpc/connect";
import { agentRoutesToJson } from "../../../services/common/agent-route-write.js";
import { fetchAgentRoutes } from "../agent-routes.js";
import { AGENT_TABLE_MAX_BYTES, agentsRequestOf } from "./dashboard-agents.js";
import { sendText } from "./static-assets.js";

/** What the agents' endpoints read: the agents by name and the deadline of one table's read. */
export interface AgentProxyOptions {
  /** The agents' admin base URLs by name (`--agent NAME=URL`); empty: `/agents` lists none. */
  readonly agents: ReadonlyMap<string, string>;
  /** How long one agent may take to answer its whole route table. */
  readonly timeoutMs: number;
}

function sendJson(response: ServerResponse, body: string): void {
  response.writeHead(200, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

/**
 * Answers one request under `/agents` (see the file's comment); never
 * rejects: a failure is a 502 with its reason, and a browser that goes away
 * cancels the agent's read.
 */
export async function serveAgents(
  request: IncomingMessage,
  response: ServerResponse,
  options: AgentProxyOptions,
): Promise<void> {
  const asked = agentsRequestOf(request.method ?? "", request.url ?? "", options.agents);
  if (asked.kind === "refused") {
    if (asked.refusal.status === 405) response.setHeader("allow", "GET");
    return sendText(response, asked.refusal);
  }
  if (asked.kind === "list") {
    return sendJson(response, `${JSON.stringify({ agents: [...options.agents.keys()] })}\n`);
  }
  const gone = new AbortController();
  response.once("close", () => gone.abort());
  try {
    const entries = await fetchAgentRoutes(asked.url, {
      timeoutMs: options.timeoutMs,
      signal: gone.signal,
      maxBytes: AGENT_TABLE_MAX_BYTES,
    });
    sendJson(response, agentRoutesToJson(entries));
  } catch (error) {
    if (gone.signal.aborted) return;
    const reason = error instanceof ConnectError ? error.rawMessage : String(error);
    sendText(response, {
      status: 502,
      reason: `agent ${asked.name}: ${reason.replace(/\s+/g, " ")}`,
    });
  }
}
