/**
 * The agent as a library (`createAgent`) against an in-process registrar on
 * a real socket: route tables through a listener and through the async
 * iterator, the dependency set changed through the API, and a restart that
 * serves the cache before any registrar answers.
 */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttp2Server } from "node:http2";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import type { RouteTable } from "../../services/common/route-merge.js";
import { readSample } from "../support/agent-process.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";
import { waitFor } from "../support/wait.js";

const agents: Agent[] = [];
const closers: (() => Promise<void>)[] = [];
const registrars: TestRegistrar[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await Promise.all(registrars.splice(0).map((r) => r.stop()));
  await Promise.all(closers.splice(0).map((close) => close()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

const summary = (table: RouteTable | undefined) =>
  table?.services.map((e) => `${e.service}@${e.version.slice(-4, -1)}`) ?? [];

function agentFor(registrar: string, cacheDir: string, dependencies: string[]): Agent {
  const agent = createAgent({
    registrar,
    cluster: "spoke",
    dependencies,
    cacheDir,
    pollIntervalMs: 100,
    backoffInitialMs: 10,
    backoffMaxMs: 50,
  });
  agents.push(agent);
  return agent;
}

/** Fills a cache directory with a table of shop/a from an in-process registrar, and stops. */
async function cachedTable(): Promise<{ cacheDir: string; table: string[] }> {
  const registrar = await startTestRegistrar(["--cluster", "hub"]);
  await registrar.registrar.store.put(makeProjection("shop/a", { version: versionAt(4) }));
  const cacheDir = await mkdtemp(join(tmpdir(), "aether-agent-lib-"));
  dirs.push(cacheDir);
  const agent = agentFor(registrar.url, cacheDir, ["shop/a"]);
  await agent.start();
  await agent.whenReady();
  const table = summary(agent.table);
  await agent.stop();
  await registrar.stop();
  return { cacheDir, table };
}

/** An HTTP/2 server that answers every request with bytes that are not a valid message. */
async function garbageServer(): Promise<string> {
  const server = createHttp2Server();
  // The agent ends its sessions with GOAWAY(CANCEL) when it gives up on this
  // server; Node reports that as a session error, which this fake must own,
  // and (Node 20) destroys every stream still open with that same error, so
  // each stream must own it too.
  server.on("session", (session) => session.on("error", () => undefined));
  server.on("stream", (stream, headers) => {
    stream.on("error", () => undefined);
    stream.respond({ ":status": 200, "content-type": String(headers["content-type"]) });
    stream.end(Buffer.from([0, 0, 0, 0, 9, 0xff, 0xff, 0xff, 0xff, 0x0f, 1, 2, 3, 4, 5, 6, 7]));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

describe("agent library", () => {
  it("publishes route tables to listeners and to the iterator, follows setDependencies, and serves its cache first after a restart", async () => {
    const registrar = await startTestRegistrar(["--cluster", "hub"]);
    registrars.push(registrar);
    const store = registrar.registrar.store;
    await store.put(makeProjection("shop/a", { version: versionAt(1) }));
    await store.put(makeProjection("shop/b", { version: versionAt(1) }));
    const cacheDir = await mkdtemp(join(tmpdir(), "aether-agent-lib-"));
    dirs.push(cacheDir);

    const agent = agentFor(registrar.url, cacheDir, ["shop/a"]);
    const heard: string[][] = [];
    agent.onUpdate((table) => heard.push(summary(table)));
    agent.onUpdate(() => {
      throw new Error("a broken listener does not stop the others");
    });
    const iterated: string[][] = [];
    const abort = new AbortController();
    const iterating = (async () => {
      for await (const table of agent.updates({ signal: abort.signal })) {
        iterated.push(summary(table));
      }
    })();
    await agent.start();
    await agent.whenReady();
    await waitFor(() => heard.length === 1, 5_000, "the first table");
    expect(heard[0]).toEqual(["shop/a@001"]);

    await store.put(makeProjection("shop/a", { version: versionAt(2) }));
    await waitFor(() => heard.length === 2, 5_000, "the change");
    expect(heard[1]).toEqual(["shop/a@002"]);
    await store.put(makeProjection("shop/b", { version: versionAt(2) })); // outside the set
    agent.setDependencies(["shop/a", "shop/b"]);
    await waitFor(() => heard.length === 3, 5_000, "the new dependency");
    expect(heard[2]).toEqual(["shop/a@002", "shop/b@002"]);
    await waitFor(() => iterated.at(-1)?.length === 2, 5_000, "the iterator to catch up");
    expect(heard).toContainEqual(iterated[0]);
    expect(() => agent.setDependencies(["Shop/a"])).toThrow(TypeError);
    abort.abort();
    await iterating;

    await agent.stop();
    await registrar.stop();
    registrars.splice(0);
    // The registrar is gone: a new agent serves the cached table as soon as it started.
    const restarted = agentFor(registrar.url, cacheDir, ["shop/a", "shop/b"]);
    await restarted.start();
    expect(restarted.ready).toBe(true);
    expect(summary(restarted.table)).toEqual(["shop/a@002", "shop/b@002"]);
    const first = await restarted.updates()[Symbol.asyncIterator]().next();
    expect(summary(first.value as RouteTable)).toEqual(["shop/a@002", "shop/b@002"]);
    await waitFor(() => restarted.mode === "poll", 5_000, "the poll fallback");
    expect(summary(restarted.table)).toEqual(["shop/a@002", "shop/b@002"]);
  });

  it("keeps its cached table when its registrar answers garbage, counting the failures", async () => {
    const { cacheDir, table } = await cachedTable();
    expect(table).toEqual(["shop/a@004"]);
    const agent = agentFor(await garbageServer(), cacheDir, ["shop/a"]);
    await agent.start();
    const sample = async (name: string) =>
      readSample(await agent.metrics.registry.metrics(), name) ?? 0;
    await waitFor(
      async () =>
        (await sample('aether_config_import_errors_total{operation="watch"}')) >= 2 &&
        (await sample('aether_config_import_errors_total{operation="poll"}')) >= 2,
      10_000,
      "failed streams and polls",
    );
    expect(agent.ready).toBe(true);
    expect(agent.mode).toBe("poll");
    expect(summary(agent.table)).toEqual(table);
  });
});
