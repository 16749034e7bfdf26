/**
 * The console's static files, as `aetherctl dashboard` serves them from the
 * assets directory (the console's build output): GET and HEAD only, the
 * file a path names (`request-checks.ts` decides which, and refuses what
 * is outside), its real path checked again to lie inside the directory (a
 * symbolic link out of it is not followed), with its content type and cache
 * policy. While the directory does not exist, `/` answers a page saying the
 * console is not built.
 */
import { createReadStream } from "node:fs";
import { realpath, stat } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { join, sep } from "node:path";
import { pipeline } from "node:stream/promises";
import { assetPathOf, cacheControlOf, contentTypeOf, type Refusal } from "./request-checks.js";
import { contentHeaders } from "./response-headers.js";

/** Writes a refusal or error as one line of text/plain. */
export function sendText(response: ServerResponse, refusal: Refusal): void {
  const body = `${refusal.reason}\n`;
  response.writeHead(refusal.status, {
    ...contentHeaders("text/plain; charset=utf-8"),
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(body),
  });
  response.end(body);
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

/** The self-contained page `/` answers while `assetsDir` does not exist. */
export function notBuiltPage(assetsDir: string): string {
  const dir = escapeHtml(assetsDir);
  return `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>aether console: not built</title></head>
<body>
<h1>The console's assets are not built</h1>
<p><code>aetherctl dashboard</code> serves the console from <code>${dir}</code>, which does not exist.
Build the console into that directory (or point <code>--assets DIR</code> at a build) and reload this page.</p>
<p>The API is served all the same: this server forwards the console's ConfigService calls
(<code>/aether.registry.v1.ConfigService/…</code>) to the registrar with aetherctl's own connection settings.</p>
</body>
</html>
`;
}

/** Whether `path` is `dir` or inside it. */
function isInside(dir: string, path: string): boolean {
  return path === dir || path.startsWith(dir.endsWith(sep) ? dir : `${dir}${sep}`);
}

/**
 * Resolves the real path of `relative` under `assetsDir` when it is a
 * regular file inside the directory's real path; undefined otherwise
 * (missing, a directory, or a link that leads out).
 */
async function resolveFile(
  assetsDir: string,
  relative: string,
): Promise<{ path: string; size: number } | undefined> {
  try {
    const root = await realpath(assetsDir);
    const path = await realpath(join(root, relative));
    if (!isInside(root, path)) return undefined;
    const info = await stat(path);
    return info.isFile() ? { path, size: info.size } : undefined;
  } catch {
    return undefined;
  }
}

async function assetsDirExists(assetsDir: string): Promise<boolean> {
  try {
    return (await stat(assetsDir)).isDirectory();
  } catch {
    return false;
  }
}

/**
 * Answers a request for a static file from `assetsDir`: 405 for a method
 * other than GET and HEAD, the refusals of `assetPathOf`, 404 for what is
 * not a file inside the directory, the not-built page for `/` while the
 * directory does not exist, else the file.
 */
export async function serveAsset(
  request: IncomingMessage,
  response: ServerResponse,
  assetsDir: string,
): Promise<void> {
  if (request.method !== "GET" && request.method !== "HEAD") {
    response.setHeader("allow", "GET, HEAD");
    sendText(response, { status: 405, reason: `${request.method} is not allowed here` });
    return;
  }
  const asset = assetPathOf(request.url ?? "");
  if (asset.kind === "refused") return sendText(response, asset.refusal);
  const file = await resolveFile(assetsDir, asset.path);
  if (file === undefined) {
    if (asset.path === "index.html" && !(await assetsDirExists(assetsDir))) {
      const body = notBuiltPage(assetsDir);
      response.writeHead(200, {
        ...contentHeaders("text/html; charset=utf-8"),
        "cache-control": "no-store",
        "content-length": Buffer.byteLength(body),
      });
      response.end(request.method === "HEAD" ? undefined : body);
      return;
    }
    return sendText(response, { status: 404, reason: "not found" });
  }
  response.writeHead(200, {
    ...contentHeaders(contentTypeOf(asset.path)),
    "cache-control": cacheControlOf(asset.path),
    "content-length": file.size,
  });
  if (request.method === "HEAD") {
    response.end();
    return;
  }
  await pipeline(createReadStream(file.path), response).catch(() => response.destroy());
}
