/**
 * The agent's route table on a Unix socket (`--routes-listen unix:PATH`):
 * served only there, with the socket's mode 0660, a stale socket file
 * replaced at start and the socket removed at stop; the pod-address endpoint
 * keeps health and metrics but no longer answers /routes. Real sockets, an
 * in-process registrar.
 */
import { lstat, mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { type Agent, createAgent } from "../../clients/agent/agent.js";
import { startTestRegistrar, type TestRegistrar } from "../support/in-process-registrar.js";
import { makeProjection, versionAt } from "../support/projections.js";

const agents: Agent[] = [];
const registrars: TestRegistrar[] = [];
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all(agents.splice(0).map((a) => a.stop()));
  await Promise.all(registrars.splice(0).map((r) => r.stop()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** GET `path` over TCP (`base` is a URL) or a Unix socket (`base` is `unix:PATH`). */
function get(base: string, path: string): Promise<{ status: number; body: string }> {
  const target = base.startsWith("unix:")
    ? { socketPath: base.slice("unix:".length), path }
    : { host: new URL(base).hostname, port: new URL(base).port, path };
  return new Promise((resolve, reject) => {
    const req = request({ ...target, method: "GET" }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe("agent routes on a Unix socket", () => {
  it("serves /routes only on the socket, health and metrics only on --listen, and cleans up", async () => {
    const registrar = await startTestRegistrar(["--cluster", "hub"]);
    registrars.push(registrar);
    await registrar.registrar.store.put(makeProjection("shop/a", { version: versionAt(1) }));
    const dir = await mkdtemp(join(tmpdir(), "aether-agent-sock-"));
    dirs.push(dir);
    const socket = join(dir, "routes.sock");
    await writeFile(socket, "a stale file where the socket goes");

    const agent = createAgent({
      registrar: registrar.url,
      cluster: "spoke",
      dependencies: ["shop/a"],
      listen: { host: "127.0.0.1", port: 0 },
      routesListen: { path: socket },
    });
    agents.push(agent);
    await agent.start();
    await agent.whenReady();
    expect(agent.routesAddress?.url).toBe(`unix:${socket}`);
    expect((await lstat(socket)).isSocket()).toBe(true);
    expect((await stat(socket)).mode & 0o777).toBe(0o660);

    const routes = await get(`unix:${socket}`, "/routes");
    expect(routes.status).toBe(200);
    expect(JSON.parse(routes.body).services.map((s: { service: string }) => s.service)).toEqual([
      "shop/a",
    ]);
    expect((await get(`unix:${socket}`, "/metrics")).status).toBe(404);

    const admin = agent.address?.url as string;
    expect((await get(admin, "/routes")).status).toBe(404);
    expect(await get(admin, "/healthz")).toEqual({ status: 200, body: "ok\n" });
    expect((await get(admin, "/readyz")).status).toBe(200);
    expect((await get(admin, "/metrics")).body).toContain("aether_config_agent_ready 1");

    await agent.stop();
    await expect(lstat(socket)).rejects.toThrow(/ENOENT/);
  });

  it("serves everything on --listen when no --routes-listen is given (the sandbox's way)", async () => {
    const registrar = await startTestRegistrar(["--cluster", "hub"]);
    registrars.push(registrar);
    await registrar.registrar.store.put(makeProjection("shop/a", { version: versionAt(1) }));
    const agent = createAgent({
      registrar: registrar.url,
      cluster: "spoke",
      dependencies: ["shop/a"],
      listen: { host: "127.0.0.1", port: 0 },
    });
    agents.push(agent);
    await agent.start();
    await agent.whenReady();
    expect(agent.routesAddress).toEqual(agent.address);
    const url = agent.address?.url as string;
    expect((await get(url, "/routes")).status).toBe(200);
    expect((await get(url, "/healthz")).status).toBe(200);
  });
});
