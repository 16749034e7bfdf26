/**
 * `aetherctl dashboard --agent NAME=URL` (pure parts): the flag's values →
 * the agents by name, with usage errors for a bad form, name or URL and a
 * repeated name; a request target under `/agents` → the list, one agent's
 * route table, or a refusal (405, 404 saying which agents there are).
 */
import { describe, expect, it } from "vitest";
import { parseAetherctlFlags } from "../../clients/aetherctl/aetherctl-flags.js";
import {
  agentsRequestOf,
  isAgentsPath,
  parseAgentFlags,
} from "../../clients/aetherctl/dashboard/dashboard-agents.js";
import { UsageError } from "../../services/process/usage-error.js";

describe("dashboard --agent NAME=URL", () => {
  it.each([
    [undefined, []],
    [["west=http://127.0.0.1:8081"], [["west", "http://127.0.0.1:8081"]]],
    [["west=http://127.0.0.1:8081//"], [["west", "http://127.0.0.1:8081"]]],
    [
      ["east=https://agent.east:9443/admin/", "west=http://[::1]:8081"],
      [
        ["east", "https://agent.east:9443/admin"],
        ["west", "http://[::1]:8081"],
      ],
    ],
  ])("%j gives %j", (values, want) => {
    expect([...parseAgentFlags(values)]).toEqual(want);
  });

  it.each([
    [["west"], /--agent "west" must be NAME=URL/],
    [["=http://x:1"], /cluster name "" is not a DNS-1123 label/],
    [["West=http://x:1"], /cluster name "West" is not a DNS-1123 label/],
    [["west=127.0.0.1:8081"], /west=127\.0\.0\.1:8081: the URL is not an http\(s\) URL/],
    [["west=ftp://x:1"], /the URL is not an http\(s\) URL/],
    [["west=http://me:pw@x:1"], /the URL must not carry credentials/],
    [["west=http://x:1/?a=b"], /must not have a query or fragment/],
    [
      ["west=http://x:1", "west=http://y:2"],
      /--agent west is given twice \(http:\/\/x:1 and http:\/\/y:2\)/,
    ],
  ])("%j is a usage error of dashboard", (values, message) => {
    const usage = expect.objectContaining({
      command: "dashboard",
      message: expect.stringMatching(message),
    });
    expect(() => parseAgentFlags(values)).toThrowError(usage);
    expect(() => parseAgentFlags(values)).toThrowError(UsageError);
  });

  it("is repeatable on the command line", () => {
    const line = parseAetherctlFlags(
      ["dashboard", "--agent", "east=http://127.0.0.1:1", "--agent", "west=http://127.0.0.1:2"],
      {},
    );
    if (line.kind !== "run" || line.command.name !== "dashboard") throw new Error("not run");
    expect([...line.command.agents.keys()]).toEqual(["east", "west"]);
  });
});

describe("dashboard: requests under /agents", () => {
  const agents = new Map([
    ["east", "http://127.0.0.1:1"],
    ["west", "http://127.0.0.1:2"],
  ]);

  it.each([
    ["/agents", true],
    ["/agents?x=1", true],
    ["/agents/west/routes", true],
    ["/agentsx", false],
    ["/assets/agents", false],
    ["/", false],
  ])("%s is under /agents: %s", (target, want) => {
    expect(isAgentsPath(target)).toBe(want);
  });

  it.each([
    ["GET", "/agents", { kind: "list" }],
    ["GET", "/agents?fresh=1", { kind: "list" }],
    ["GET", "/agents/west/routes", { kind: "routes", name: "west", url: "http://127.0.0.1:2" }],
    ["GET", "/agents/east/routes?x", { kind: "routes", name: "east", url: "http://127.0.0.1:1" }],
    ["POST", "/agents/west/routes", { kind: "refused", refusal: { status: 405 } }],
    ["HEAD", "/agents", { kind: "refused", refusal: { status: 405 } }],
    ["GET", "/agents/", { kind: "refused", refusal: { status: 404, reason: "not found" } }],
    ["GET", "/agents/west", { kind: "refused", refusal: { status: 404, reason: "not found" } }],
    ["GET", "/agents/west/routes/x", { kind: "refused", refusal: { status: 404 } }],
    ["GET", "/agents/../routes", { kind: "refused", refusal: { status: 404 } }],
    [
      "GET",
      "/agents/north/routes",
      {
        kind: "refused",
        refusal: { status: 404, reason: 'no agent named "north"; the dashboard has east, west' },
      },
    ],
  ])("%s %s is %j", (method, target, want) => {
    expect(agentsRequestOf(method, target, agents)).toMatchObject(want);
  });

  it("says there are none when no --agent was given", () => {
    expect(agentsRequestOf("GET", "/agents/west/routes", new Map())).toMatchObject({
      refusal: {
        status: 404,
        reason: 'no agent named "west"; the dashboard has none (see --agent)',
      },
    });
  });
});
