/**
 * The published import status counts the registrar's agents: a real
 * registrar (in-process, embedded store over a shared memory backend, as
 * the sandbox runs it) and a real agent on a loopback socket; once the
 * agent reports, the registrar's published value of each service it
 * depends on counts it in sync, and the header's totals count it once.
 */
import { afterEach, describe, expect, it } from "vitest";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import type { ServiceImportStatus } from "../../gen/aether/registry/v1/fleet_pb.js";
import type { StatusFeed } from "../../services/registrar/fleet/fleet-inputs.js";
import {
  createMemoryBackend,
  createMemoryStore,
} from "../../services/registrar/store/memory-store.js";
import { startTestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const running: { stop(): Promise<unknown> }[] = [];
afterEach(async () => {
  for (const part of running.splice(0).reverse()) await part.stop();
});

function published(feed: StatusFeed, service: string): ServiceImportStatus | undefined {
  for (const replica of feed.replicas()) {
    if (replica.cluster === "spoke") return replica.services.get(service);
  }
  return undefined;
}

describe("published import status with agents", () => {
  it("counts a reporting agent in sync per service and once in the header", async () => {
    const backend = createMemoryBackend();
    const hub = createMemoryStore({ origin: "hub", backend });
    await hub.put(makeProjection("shop/a", { version: versionAt(1) }));
    await hub.put(makeProjection("shop/b", { version: versionAt(1) }));
    const { registrar, url } = await startTestRegistrar(
      [
        ...["--cluster", "spoke", "--agent-report-interval", "1s"],
        ...["--replica-id", "spoke-0", "--status-interval", "100ms"],
      ],
      { store: createMemoryStore({ origin: "spoke", backend }) },
    );
    running.push(registrar);
    const agent: Agent = createAgent({
      registrar: url,
      cluster: "spoke",
      dependencies: ["shop/a"],
      agentId: "node-1",
      backoffInitialMs: 20,
      backoffMaxMs: 200,
    });
    running.push(agent);
    await agent.start();

    const feed = registrar.statusFeed;
    await waitFor(
      () => published(feed, "shop/a")?.agents?.inSync === 1,
      10_000,
      "the agent counted in sync for shop/a",
    );
    const a = published(feed, "shop/a");
    expect(a?.version).toBe(versionAt(1));
    expect(a?.agents).toMatchObject({ inSync: 1, behind: 0, rejecting: 0 });
    // shop/b is served but no agent depends on it.
    expect(published(feed, "shop/b")?.agents).toMatchObject({ inSync: 0, behind: 0, rejecting: 0 });
    await waitFor(
      () =>
        [...feed.replicas()].some((r) => r.cluster === "spoke" && r.header?.agents?.inSync === 1),
      10_000,
      "the header's totals counting the agent once",
    );
  }, 30_000);
});
