/**
 * `aetherctl dashboard` run in the test process (`runAetherctl`, what
 * `main.ts` runs) on a free loopback port, for the dashboard's tests: its
 * URL once it printed it, what it printed, plain HTTP requests with any
 * Host, Origin or path (fetch would normalize them), and Ctrl-C.
 */
import { request } from "node:http";
import type { BrowserOpener } from "../../clients/aetherctl/dashboard/open-browser.js";
import { runAetherctlInProcess } from "./aetherctl-in-process.js";

/** A running dashboard. */
export interface RunningDashboard {
  /** Its URL, `http://127.0.0.1:PORT/`. */
  readonly url: string;
  /** What it printed so far on stdout and stderr. */
  output(): { stdout: string; stderr: string };
  /** Interrupts it (Ctrl-C) and resolves with its exit code and output. */
  stop(): Promise<{ code: number; stdout: string; stderr: string }>;
}

/**
 * Starts `aetherctl dashboard --listen 127.0.0.1:0` with `args` (the
 * registrar, TLS and dashboard flags) and `options.env` (default none: the
 * operator's `AETHER_TLS_*` for a TLS registrar) and resolves once it printed its URL
 * and the registrar check (its second stderr line, or first); rejects when
 * it exits before that.
 */
export async function startDashboard(
  args: readonly string[],
  options: { openBrowser?: BrowserOpener; env?: NodeJS.ProcessEnv } = {},
): Promise<RunningDashboard> {
  const interrupt = new AbortController();
  let stdout = "";
  let stderr = "";
  let onReady: (url: string) => void = () => {};
  const ready = new Promise<string>((resolve) => {
    onReady = resolve;
  });
  const checked = () => /registrar \S+ (answers|does not answer)/.test(stderr);
  const run = runAetherctlInProcess(["dashboard", "--listen", "127.0.0.1:0", ...args], {
    signal: interrupt.signal,
    env: options.env ?? {},
    ...(options.openBrowser === undefined ? {} : { openBrowser: options.openBrowser }),
    onStdout: (printed) => {
      stdout = printed;
    },
    onStderr: (printed) => {
      stderr = printed;
      const url = /serving (http:\/\/\S+)/.exec(stdout)?.[1];
      if (url !== undefined && checked()) onReady(url);
    },
  });
  const url = await Promise.race([
    ready,
    run.then((result) => {
      throw new Error(`dashboard exited ${result.code} before serving: ${result.stderr}`);
    }),
  ]);
  return {
    url,
    output: () => ({ stdout, stderr }),
    stop: () => {
      interrupt.abort();
      return run;
    },
  };
}

/** The answer to one plain HTTP request. */
export interface PlainResponse {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly body: string;
}

/**
 * Sends one HTTP/1.1 request to `url`'s host and port with the literal
 * `path` and `headers` (a `host` among them replaces the real one), on a
 * connection of its own.
 */
export function plainRequest(
  url: string,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<PlainResponse> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        ...{ host: hostname, port, path, method: options.method ?? "GET" },
        ...{ headers: options.headers, agent: false },
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}
