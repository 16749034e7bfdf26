/**
 * `aetherctl dashboard --agent NAME=URL` (issue 17: the Explain view as one
 * cluster's agent), in process on a real loopback socket, with real HTTP
 * servers on real sockets standing in for agents' admin endpoints: `GET
 * /agents` lists the names; `GET /agents/NAME/routes` answers the agent's
 * route table (the agent's document, read back as the same entries); an
 * agent that cannot be reached, does not answer within `--timeout`,
 * answers something else or too much gets 502 with a one-line reason; an
 * unknown name 404, another method 405, a foreign Host 421 and another
 * site's Origin 403, as for the API.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AGENT_TABLE_MAX_BYTES } from "../../clients/aetherctl/dashboard/dashboard-agents.js";
import { parseAgentRoutes } from "../../services/common/agent-route-parse.js";
import { mergeRouteTable, routeTableToJson } from "../../services/common/route-merge.js";
import { plainRequest, type RunningDashboard, startDashboard } from "../support/dashboard-run.js";
import { meshRecord, ruleProjection, versionAt } from "../support/projections.js";

/** A registrar address where nothing listens. */
const NOBODY = "http://127.0.0.1:1";

/** West's route table: its own (local) override of shop/checkout and the hub's mesh defaults. */
const WEST_ROUTES = routeTableToJson(
  mergeRouteTable({
    dependencies: ["shop/checkout"],
    local: new Map([
      [
        "shop/checkout",
        ruleProjection(
          "shop/checkout",
          [{ backends: [{ service: "shop/checkout-v1", port: 8080, weight: 1 }] }],
          { port: 8080 },
        ),
      ],
    ]),
    imported: new Map([
      [
        "@mesh",
        {
          origin: "hub",
          service: "@mesh",
          projection: meshRecord({ requestTimeout: { seconds: 15n } }, { version: versionAt(3) }),
        },
      ],
    ]),
    cluster: "west",
  }),
);

let agents: Server;
let agentsUrl: string;
let dashboard: RunningDashboard;
let host: string;

beforeAll(async () => {
  // One server, a path per behaviour: each "agent" is a base URL on it.
  agents = createServer((request, response) => {
    switch (request.url) {
      case "/west/routes":
        response.writeHead(200, { "content-type": "application/json" });
        return response.end(WEST_ROUTES);
      case "/slow/routes":
        return; // never answers
      case "/junk/routes":
        response.writeHead(200, { "content-type": "text/plain" });
        return response.end("<html>a\nproxy's page</html>");
      case "/starting/routes":
        response.writeHead(503, { "content-type": "text/plain" });
        return response.end("no route table yet\n(waiting for the registrar)\n");
      case "/huge/routes":
        response.writeHead(200, { "content-type": "application/json" });
        return response.end(`{"services": [], "pad": "${"x".repeat(AGENT_TABLE_MAX_BYTES)}"}`);
      default:
        response.writeHead(404);
        return response.end();
    }
  });
  await new Promise<void>((resolve) => agents.listen(0, "127.0.0.1", resolve));
  agentsUrl = `http://127.0.0.1:${(agents.address() as AddressInfo).port}`;
  const agentFlags = ["west", "slow", "junk", "starting", "huge"].flatMap((name) => [
    "--agent",
    `${name}=${agentsUrl}/${name}/`,
  ]);
  dashboard = await startDashboard([
    ...["--registrar", NOBODY, "--timeout", "1s"],
    ...[...agentFlags, "--agent", `down=${NOBODY}`],
  ]);
  host = new URL(dashboard.url).host;
}, 30_000);

afterAll(async () => {
  await dashboard?.stop();
  agents?.closeAllConnections();
  await new Promise((resolve) => agents?.close(resolve));
});

describe("aetherctl dashboard --agent: the agents' route tables", () => {
  it("lists the agents by name, in the order given", async () => {
    const list = await plainRequest(dashboard.url, "/agents");
    expect(list.status).toBe(200);
    expect(list.headers).toMatchObject({
      "content-type": "application/json",
      "cache-control": "no-store",
      "x-content-type-options": "nosniff",
    });
    expect(JSON.parse(list.body)).toEqual({
      agents: ["west", "slow", "junk", "starting", "huge", "down"],
    });
  });

  it("answers an agent's route table as the agent's own document", async () => {
    const routes = await plainRequest(dashboard.url, "/agents/west/routes", {
      headers: { origin: `http://${host}`, "sec-fetch-site": "same-origin" },
    });
    expect(routes.status).toBe(200);
    expect(routes.headers["content-type"]).toBe("application/json");
    expect(routes.body).toBe(WEST_ROUTES);
    expect(parseAgentRoutes(routes.body).map((e) => [e.service, e.source, e.origin])).toEqual([
      ["@mesh", "imported", "hub"],
      ["shop/checkout", "local", "west"],
    ]);
  });

  it.each([
    [
      "down",
      /^agent down: cannot reach the agent at http:\/\/127\.0\.0\.1:1 \(.+\); is it running/,
    ],
    ["slow", /^agent slow: the agent at \S+\/slow did not answer within 1000 ms/],
    ["junk", /^agent junk: \S+\/junk\/routes is not an agent's route table: not JSON: /],
    [
      "starting",
      /^agent starting: the agent at \S+ answered GET \/routes with HTTP 503: no route table yet \(waiting for the registrar\)$/,
    ],
    ["huge", /^agent huge: the agent at \S+ answered GET \/routes with more than 16777216 bytes$/],
  ])("answers 502 with a one-line reason for agent %s", async (name, reason) => {
    const answer = await plainRequest(dashboard.url, `/agents/${name}/routes`);
    expect(answer.status).toBe(502);
    expect(answer.headers["content-type"]).toBe("text/plain; charset=utf-8");
    expect(answer.body.endsWith("\n")).toBe(true);
    expect(answer.body.trimEnd()).not.toContain("\n");
    expect(answer.body.trimEnd()).toMatch(reason);
  });

  it.each([
    [
      "GET",
      "/agents/north/routes",
      {},
      404,
      'no agent named "north"; the dashboard has west, slow',
    ],
    ["GET", "/agents/west", {}, 404, "not found"],
    ["POST", "/agents/west/routes", {}, 405, "POST is not allowed: GET only"],
    ["GET", "/agents", { host: "evil.example:80" }, 421, "is not this dashboard's address"],
    ["GET", "/agents/west/routes", { origin: "https://evil.example" }, 403, "cross-site call"],
    ["GET", "/agents", { "sec-fetch-site": "cross-site" }, 403, "only the dashboard's own page"],
  ])("refuses %s %s %j with %i", async (method, path, headers, status, reason) => {
    const answer = await plainRequest(dashboard.url, path, { method, headers });
    expect(answer.status).toBe(status);
    expect(answer.body).toContain(reason);
    if (status === 405) expect(answer.headers.allow).toBe("GET");
  });
});
