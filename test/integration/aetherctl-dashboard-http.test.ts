/**
 * `aetherctl dashboard`'s HTTP front (issue 17, server side), in process on
 * a real loopback socket, with a registrar that does not answer: it says so
 * and serves anyway (an API call gets aetherctl's explanation); it serves
 * the console's files with their types, cache policy and security headers,
 * refuses paths out of the assets directory (a symbolic link too), other
 * methods, a foreign Host (DNS rebinding) and another site's Origin; it
 * warns when listening beyond loopback; and Ctrl-C ends it with exit 0.
 */
import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Code, ConnectError, createClient } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HTML_CONTENT_SECURITY_POLICY } from "../../clients/aetherctl/dashboard/response-headers.js";
import { ConfigService } from "../../gen/aether/registry/v1/config_service_pb.js";
import { plainRequest, type RunningDashboard, startDashboard } from "../support/dashboard-run.js";

const SCRIPT = "assets/index-B3x9_kQz.js";
const LIST = "/aether.registry.v1.ConfigService/ListAllConfig";
/** A registrar address where nothing listens. */
const NOBODY = "http://127.0.0.1:1";

let dir: string;
let dashboard: RunningDashboard;
let host: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-dashboard-http-"));
  const assets = join(dir, "dist");
  await mkdir(join(assets, "assets"), { recursive: true });
  await writeFile(join(assets, "index.html"), "<!doctype html><title>console</title>");
  await writeFile(join(assets, SCRIPT), "console.log('hi');");
  await writeFile(join(dir, "secret.txt"), "not for the browser");
  await symlink(join(dir, "secret.txt"), join(assets, "leak.txt"));
  dashboard = await startDashboard(["--registrar", NOBODY, "--timeout", "2s", "--assets", assets]);
  host = new URL(dashboard.url).host;
}, 30_000);

afterAll(async () => {
  await dashboard?.stop();
  await rm(dir, { recursive: true, force: true });
});

const connectJson = { "content-type": "application/json", "connect-protocol-version": "1" };

describe("aetherctl dashboard: the HTTP front", () => {
  it("says the registrar does not answer, and serves anyway", async () => {
    expect(dashboard.output().stderr).toMatch(
      /registrar http:\/\/127\.0\.0\.1:1 does not answer \(serving anyway; .*\): unavailable: cannot reach the registrar/,
    );
    const client = createClient(
      ConfigService,
      createConnectTransport({ baseUrl: dashboard.url, httpVersion: "1.1" }),
    );
    const error = await client.listAllConfig({}).then(
      () => new ConnectError("answered"),
      (e: unknown) => ConnectError.from(e),
    );
    expect(error.code).toBe(Code.Unavailable);
    expect(error.rawMessage).toMatch(/^cannot reach the registrar at http:\/\/127\.0\.0\.1:1/);
  });

  it("serves index.html at / with the CSP, nosniff and no-referrer, revalidated", async () => {
    const page = await plainRequest(dashboard.url, "/");
    expect(page.status).toBe(200);
    expect(page.body).toBe("<!doctype html><title>console</title>");
    expect(page.headers).toMatchObject({
      "content-type": "text/html; charset=utf-8",
      "content-security-policy": HTML_CONTENT_SECURITY_POLICY,
      "x-content-type-options": "nosniff",
      "referrer-policy": "no-referrer",
      "cache-control": "no-cache",
    });
    expect(HTML_CONTENT_SECURITY_POLICY).toMatch(/default-src 'self'; connect-src 'self'/);
  });

  it("serves a hashed script as JavaScript, cached for good, and HEAD without a body", async () => {
    const script = await plainRequest(dashboard.url, `/${SCRIPT}`);
    expect(script.status).toBe(200);
    expect(script.body).toBe("console.log('hi');");
    expect(script.headers["content-type"]).toBe("text/javascript; charset=utf-8");
    expect(script.headers["cache-control"]).toBe("public, max-age=31536000, immutable");
    expect(script.headers["content-security-policy"]).toBeUndefined();
    const head = await plainRequest(dashboard.url, `/${SCRIPT}`, { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers["content-length"]).toBe(String("console.log('hi');".length));
    expect(head.body).toBe("");
  });

  it.each([
    "/../secret.txt",
    "/assets/../../secret.txt",
    "/%2e%2e/secret.txt",
    "/assets/%2e%2e%2f%2e%2e%2fsecret.txt",
    "/leak.txt",
    "/assets/",
    "/assets",
    "/missing.js",
  ])("refuses %s with 404 and does not show the secret", async (path) => {
    const response = await plainRequest(dashboard.url, path);
    expect(response.status).toBe(404);
    expect(response.body).not.toContain("not for the browser");
  });

  it("allows only GET and HEAD for files, and sends no CORS headers", async () => {
    const post = await plainRequest(dashboard.url, "/", { method: "POST", body: "x" });
    expect(post.status).toBe(405);
    expect(post.headers.allow).toBe("GET, HEAD");
    const preflight = await plainRequest(dashboard.url, LIST, {
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(403);
    for (const response of [post, preflight]) {
      expect(Object.keys(response.headers).filter((h) => h.startsWith("access-control"))).toEqual(
        [],
      );
    }
  });

  it("refuses a foreign Host (DNS rebinding) with 421, for files and for the API", async () => {
    for (const [path, method] of [
      ["/", "GET"],
      [LIST, "POST"],
    ] as const) {
      const response = await plainRequest(dashboard.url, path, {
        method,
        headers: { host: `rebind.evil.example:${new URL(dashboard.url).port}`, ...connectJson },
        body: method === "POST" ? "{}" : undefined,
      });
      expect(response.status).toBe(421);
      expect(response.body).toContain("is not this dashboard's address");
    }
    const localhost = await plainRequest(dashboard.url, "/", {
      headers: { host: `localhost:${new URL(dashboard.url).port}` },
    });
    expect(localhost.status).toBe(200);
  });

  it("refuses an API call from another site's page with 403, before calling the registrar", async () => {
    const crossSite: Record<string, string>[] = [
      { origin: "https://evil.example" },
      { origin: `http://${host}`, "sec-fetch-site": "cross-site" },
    ];
    for (const headers of crossSite) {
      const response = await plainRequest(dashboard.url, LIST, {
        method: "POST",
        headers: { ...connectJson, ...headers },
        body: "{}",
      });
      expect(response.status).toBe(403);
      expect(response.body).toMatch(/cross-site|only the dashboard's own page/);
    }
    // The dashboard's own page gets through (to the registrar that does not answer).
    const own = await plainRequest(dashboard.url, LIST, {
      method: "POST",
      headers: { ...connectJson, origin: `http://${host}`, "sec-fetch-site": "same-origin" },
      body: "{}",
    });
    expect(own.status).toBe(503);
    expect(JSON.parse(own.body).code).toBe("unavailable");
    expect(own.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("warns when it listens beyond loopback, and still answers only its own names", async () => {
    const wide = await startDashboard(["--registrar", NOBODY, "--listen", "0.0.0.0:0"]);
    try {
      expect(wide.output().stderr).toContain(
        "warning: listening on 0.0.0.0, not loopback: anyone who can reach it calls the registrar with your identity",
      );
      const port = new URL(wide.url).port;
      const local = await plainRequest(wide.url, "/", { headers: { host: `127.0.0.1:${port}` } });
      expect(local.status).toBe(200);
      const foreign = await plainRequest(wide.url, "/", {
        headers: { host: `evil.example:${port}` },
      });
      expect(foreign.status).toBe(421);
    } finally {
      expect((await wide.stop()).code).toBe(0);
    }
  });

  it("stops on Ctrl-C with exit 0 and no longer listens", async () => {
    const result = await dashboard.stop();
    expect(result.code).toBe(0);
    await expect(plainRequest(dashboard.url, "/")).rejects.toThrow(/ECONNREFUSED/);
  });
});
