/**
 * Running what the sandbox prints: a printed command line through `bash`
 * as a user pastes it, a printed command split into its words the way the
 * shell would, and an HTTPS GET with chosen client material (to see what a
 * registrar's mTLS port accepts).
 */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { request } from "node:https";
import { promisify } from "node:util";

const run = promisify(execFile);

/** What one command printed, and its exit code. */
export interface CommandRun {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
}

/** Runs `command` with `bash -c` in `cwd`, as pasted into a terminal there (at most `timeoutMs`). */
export async function runPrinted(
  command: string,
  cwd: string,
  timeoutMs = 60_000,
): Promise<CommandRun> {
  try {
    const { stdout, stderr } = await run("bash", ["-c", command], {
      cwd,
      timeout: timeoutMs,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return {
      code: typeof failed.code === "number" ? failed.code : -1,
      stdout: failed.stdout ?? "",
      stderr: failed.stderr ?? String(error),
    };
  }
}

/** The words `bash` makes of `text` (quotes removed, nothing expanded but quoting). */
export async function shellWords(text: string): Promise<string[]> {
  const { stdout } = await run("bash", ["-c", `printf '%s\\0' ${text}`]);
  return stdout.split("\0").slice(0, -1);
}

/** Client material for {@link tlsGet}: PEM files. */
export interface TlsClientFiles {
  /** The CAs that verify the server. */
  readonly ca: string;
  /** The client certificate and key; none when absent. */
  readonly cert?: string;
  readonly key?: string;
}

/**
 * GETs `path` from the https `base` URL with `files` (HTTP/1.1); resolves
 * with the status and body, rejects when the connection or handshake fails.
 */
export function tlsGet(
  base: string,
  path: string,
  files: TlsClientFiles,
): Promise<{ status: number; body: string }> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        ca: readFileSync(files.ca),
        ...(files.cert === undefined ? {} : { cert: readFileSync(files.cert) }),
        ...(files.key === undefined ? {} : { key: readFileSync(files.key) }),
        agent: false,
      },
      (res) => {
        let body = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          body += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end();
  });
}
