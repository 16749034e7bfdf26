/**
 * `aetherctl dashboard`'s request decisions (dashboard/request-checks.ts),
 * table-driven: which Host headers it answers (DNS rebinding), which API
 * callers it accepts (Origin, Sec-Fetch-Site), which file a path names
 * (never one outside the assets directory), content types and cache
 * policy; and its flags.
 */
import { describe, expect, it } from "vitest";
import { parseAetherctlFlags } from "../../clients/aetherctl/aetherctl-flags.js";
import { DEFAULT_ASSETS_DIR } from "../../clients/aetherctl/dashboard/dashboard-flags.js";
import { openerCommand } from "../../clients/aetherctl/dashboard/open-browser.js";
import {
  allowedHosts,
  assetPathOf,
  cacheControlOf,
  checkApiOrigin,
  checkHost,
  contentTypeOf,
  isApiPath,
  isLoopbackHost,
} from "../../clients/aetherctl/dashboard/request-checks.js";
import { UsageError } from "../../services/process/usage-error.js";

describe("dashboard: Host header", () => {
  const loopback = allowedHosts("127.0.0.1", 7070);
  it.each([
    { host: "127.0.0.1:7070", ok: true },
    { host: "localhost:7070", ok: true },
    { host: "LOCALHOST:7070", ok: true },
    { host: "[::1]:7070", ok: true },
    { host: "127.0.0.1:7071", ok: false },
    { host: "127.0.0.1", ok: false },
    { host: "evil.example:7070", ok: false },
    { host: "localhost.evil.example:7070", ok: false },
    { host: "", ok: false },
    { host: undefined, ok: false },
  ])("$host on 127.0.0.1:7070: ok=$ok", ({ host, ok }) => {
    const refusal = checkHost(host, loopback);
    expect(refusal === undefined).toBe(ok);
    if (!ok) expect(refusal?.status).toBe(421);
  });

  it("answers the listen address, extra names, and a bare name on port 80", () => {
    const hosts = allowedHosts("::1", 80, ["10.0.0.5", "fe80::1", "Workstation"]);
    for (const host of [
      "[::1]:80",
      "[::1]",
      "localhost",
      "10.0.0.5:80",
      "[fe80::1]",
      "workstation",
    ]) {
      expect(checkHost(host, hosts)).toBeUndefined();
    }
    expect(checkHost("10.0.0.6", hosts)?.status).toBe(421);
  });

  it("takes loopback addresses and localhost as loopback, nothing else", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1"]) {
      expect(isLoopbackHost(host), host).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "192.168.1.10", "127.evil.example"]) {
      expect(isLoopbackHost(host), host).toBe(false);
    }
  });
});

describe("dashboard: API callers", () => {
  it.each([
    { origin: undefined, fetchSite: undefined, ok: true },
    { origin: "http://127.0.0.1:7070", fetchSite: "same-origin", ok: true },
    { origin: "HTTP://127.0.0.1:7070", fetchSite: undefined, ok: true },
    { origin: undefined, fetchSite: "none", ok: true },
    { origin: "https://evil.example", fetchSite: "cross-site", ok: false },
    { origin: "http://localhost:7070", fetchSite: undefined, ok: false },
    { origin: "http://127.0.0.1:7071", fetchSite: undefined, ok: false },
    { origin: "null", fetchSite: undefined, ok: false },
    { origin: undefined, fetchSite: "same-site", ok: false },
    { origin: undefined, fetchSite: "cross-site", ok: false },
  ])("Origin $origin, Sec-Fetch-Site $fetchSite: ok=$ok", ({ origin, fetchSite, ok }) => {
    const refusal = checkApiOrigin({ host: "127.0.0.1:7070", origin, fetchSite });
    expect(refusal === undefined).toBe(ok);
    if (!ok) expect(refusal?.status).toBe(403);
  });

  it("takes ConfigService paths as API calls, nothing else", () => {
    const api = "/aether.registry.v1.ConfigService/";
    for (const target of [`${api}ListConfig`, `${api}WatchConfig?x=1`]) {
      expect(isApiPath(target), target).toBe(true);
    }
    const others = [
      "/aether.registry.v1.ConfigServiceX/ListConfig",
      "/grpc.health.v1.Health/Check",
    ];
    for (const target of [...others, "/index.html"]) expect(isApiPath(target), target).toBe(false);
  });
});

describe("dashboard: asset paths", () => {
  it.each([
    ["/", "index.html"],
    ["/index.html", "index.html"],
    ["/assets/index-B3x9_kQz.js?v=2", "assets/index-B3x9_kQz.js"],
    ["/fonts/a%20b.woff2", "fonts/a b.woff2"],
  ])("%s is the file %s", (target, path) => {
    expect(assetPathOf(target)).toEqual({ kind: "file", path });
  });

  it.each([
    ["/../etc/passwd", 404],
    ["/assets/../../etc/passwd", 404],
    ["/%2e%2e/etc/passwd", 404],
    ["/assets/%2e%2e%2f%2e%2e%2fetc", 404],
    ["/assets/..%5c..%5cetc", 404],
    ["/a\\b", 404],
    ["/assets/", 404],
    ["//etc/passwd", 404],
    ["/.env", 404],
    ["/x%00.html", 404],
    ["/%zz", 400],
    ["http://evil.example/", 400],
    ["*", 400],
  ])("%s is refused with %i", (target, status) => {
    const asset = assetPathOf(target);
    expect(asset.kind).toBe("refused");
    if (asset.kind === "refused") expect(asset.refusal.status).toBe(status);
  });

  it.each(
    Object.entries({
      "index.html": "text/html; charset=utf-8",
      "assets/app.JS": "text/javascript; charset=utf-8",
      "assets/app.css": "text/css; charset=utf-8",
      "logo.svg": "image/svg+xml",
      "fonts/x.woff2": "font/woff2",
      "data.bin": "application/octet-stream",
      README: "application/octet-stream",
    }),
  )("contentTypeOf(%s) = %s", (path, type) => {
    expect(contentTypeOf(path)).toBe(type);
  });

  it("caches hashed build outputs for a year and revalidates everything else", () => {
    for (const path of ["assets/index-B3x9_kQz.js", "assets/logo-0a1b2c3d.svg"]) {
      expect(cacheControlOf(path), path).toBe("public, max-age=31536000, immutable");
    }
    for (const path of ["index.html", "assets/app.js", "favicon.ico", "index-B3x9_kQz.js"]) {
      expect(cacheControlOf(path), path).toBe("no-cache");
    }
  });
});

describe("dashboard: flags and opener", () => {
  const parse = (argv: string[]) => {
    const line = parseAetherctlFlags(argv, {});
    if (line.kind !== "run") throw new Error("expected a command");
    return line.command;
  };

  it("defaults to 127.0.0.1:7070, no --open, the console's dist directory", () => {
    expect(parse(["dashboard"])).toEqual({
      name: "dashboard",
      host: "127.0.0.1",
      port: 7070,
      open: false,
      assetsDir: DEFAULT_ASSETS_DIR,
      agents: new Map(),
    });
    expect(DEFAULT_ASSETS_DIR).toMatch(/clients\/console\/dist\/$/);
  });

  it("takes --listen (IPv6 in brackets), --open and --assets", () => {
    expect(parse(["dashboard", "--listen", "[::1]:0", "--open", "--assets", "/tmp/x"])).toEqual({
      name: "dashboard",
      host: "::1",
      port: 0,
      open: true,
      assetsDir: "/tmp/x",
      agents: new Map(),
    });
  });

  it.each([
    [["dashboard", "--listen", "7070"], /--listen "7070" is not HOST:PORT/],
    [["dashboard", "--listen", "127.0.0.1:70000"], /is not HOST:PORT/],
    [["dashboard", "extra"], /takes no arguments/],
    [["dashboard", "--assets", ""], /--assets needs a directory/],
  ])("%j is a usage error of dashboard", (argv, message) => {
    const usage = expect.objectContaining({
      command: "dashboard",
      message: expect.stringMatching(message),
    });
    expect(() => parse(argv)).toThrowError(usage);
    expect(() => parse(argv)).toThrowError(UsageError);
  });

  it.each([
    ["darwin", ["open", ["http://x/"]]],
    ["win32", ["cmd", ["/c", "start", '""', "http://x/"]]],
    ["linux", ["xdg-open", ["http://x/"]]],
  ])("opens with the platform's opener on %s", (platform, want) => {
    expect(openerCommand(platform, "http://x/")).toEqual(want);
  });
});
