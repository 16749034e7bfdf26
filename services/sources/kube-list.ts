/**
 * A plain GET of a Kubernetes API path, returning the JSON as sent, and the
 * JSON merge PATCH the status writer sends (`kubePatchJson`). The
 * Kubernetes source lists through this rather than the generated API
 * clients of `@kubernetes/client-node`, which deserialise into typed models:
 * those turn `metadata.creationTimestamp` into a `Date` and drop fields the
 * model does not know, while watch events arrive as plain JSON; listing
 * plain JSON keeps both halves of the informer alike and equal to manifests.
 */
import { request as httpRequest } from "node:http";
import { request as httpsRequest, type RequestOptions } from "node:https";
import type { KubeConfig } from "@kubernetes/client-node";

/** The largest response body accepted (a list of every object of a kind). */
const MAX_BODY_BYTES = 256 * 1024 * 1024;

/** An error answer of the API server (or a failure to reach it, without `statusCode`). */
export class KubeApiError extends Error {
  override readonly name = "KubeApiError";
  /** The HTTP status, as `statusCode` (the name client-node's informer checks for 410). */
  readonly statusCode: number | undefined;
  /** The `reason` of the server's `Status` object, for example `NotFound`. */
  readonly reason: string | undefined;

  /** Creates the error for a status, a reason and a sentence. */
  constructor(message: string, statusCode?: number, reason?: string) {
    super(message);
    this.statusCode = statusCode;
    this.reason = reason;
  }
}

/** The message and reason of an error body when it is a `Status` object. */
function statusOf(body: string): { message?: string; reason?: string } {
  try {
    const parsed = JSON.parse(body) as { kind?: unknown; message?: unknown; reason?: unknown };
    if (parsed.kind !== "Status") return {};
    return {
      ...(typeof parsed.message === "string" ? { message: parsed.message } : {}),
      ...(typeof parsed.reason === "string" ? { reason: parsed.reason } : {}),
    };
  } catch {
    return {};
  }
}

/**
 * GETs `path` (with `query`) from the current cluster of `config`, with its
 * credentials and TLS settings, and resolves with the parsed JSON body.
 * Rejects with a {@link KubeApiError} for a non-200 answer (carrying the
 * status and the `Status` message) and for a transport failure; `signal`
 * aborts the request.
 */
export async function kubeGetJson(
  config: KubeConfig,
  path: string,
  query: Readonly<Record<string, string | undefined>>,
  signal: AbortSignal,
): Promise<unknown> {
  return kubeRequestJson(config, "GET", path, query, signal);
}

/**
 * PATCHes `path` of the current cluster of `config` with `body` as a JSON
 * merge patch (`application/merge-patch+json`) and resolves with the parsed
 * answer; rejects like {@link kubeGetJson} (a 409 is a {@link KubeApiError}
 * with `statusCode` 409 and reason `Conflict`).
 */
export async function kubePatchJson(
  config: KubeConfig,
  path: string,
  body: unknown,
  signal: AbortSignal,
): Promise<unknown> {
  const text = JSON.stringify(body);
  return kubeRequestJson(config, "PATCH", path, {}, signal, text);
}

/** One request of `method` with an optional merge patch body; see {@link kubeGetJson}. */
async function kubeRequestJson(
  config: KubeConfig,
  method: "GET" | "PATCH",
  path: string,
  query: Readonly<Record<string, string | undefined>>,
  signal: AbortSignal,
  body?: string,
): Promise<unknown> {
  const cluster = config.getCurrentCluster();
  if (cluster === null) throw new KubeApiError("the kubeconfig has no current cluster");
  const options: RequestOptions = {};
  await config.applyToHTTPSOptions(options);
  const url = new URL(cluster.server.replace(/\/+$/, "") + path);
  for (const [key, value] of Object.entries(query)) {
    if (value !== undefined) url.searchParams.set(key, value);
  }
  const request = url.protocol === "http:" ? httpRequest : httpsRequest;
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ...options,
        method,
        headers: {
          ...options.headers,
          Accept: "application/json",
          ...(body === undefined ? {} : { "Content-Type": "application/merge-patch+json" }),
        },
        signal,
      },
      (response) => {
        const chunks: Buffer[] = [];
        let size = 0;
        response.on("data", (chunk: Buffer) => {
          size += chunk.length;
          if (size > MAX_BODY_BYTES) {
            req.destroy(
              new KubeApiError(`${method} ${path}: the answer is over ${MAX_BODY_BYTES} bytes`),
            );
            return;
          }
          chunks.push(chunk);
        });
        response.on("error", reject);
        response.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          const code = response.statusCode ?? 0;
          if (code !== 200) {
            const { message, reason } = statusOf(body);
            const text = message ?? (response.statusMessage || "no message");
            reject(new KubeApiError(`${method} ${path}: HTTP ${code}: ${text}`, code, reason));
            return;
          }
          try {
            resolve(JSON.parse(body));
          } catch (error) {
            reject(
              new KubeApiError(
                `${method} ${path}: the answer is not JSON: ${(error as Error).message}`,
              ),
            );
          }
        });
      },
    );
    req.on("error", (error) => {
      reject(
        error instanceof KubeApiError
          ? error
          : new KubeApiError(`${method} ${path}: ${error.message}`),
      );
    });
    req.end(body);
  });
}
