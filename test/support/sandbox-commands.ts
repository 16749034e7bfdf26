/**
 * Running what the sandbox prints: a printed command line through `bash`
 * as a user pastes it (after the printed `. FILE` lines before it, in the
 * same shell), the variables those lines set, a printed command split into its words the way the
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

/**
 * A printed line and the printed lines before it that change the shell for
 * it (`. FILE`, which sets the operator's variables): pasted into one
 * terminal, those ran first in the same shell.
 */
export interface PrintedLine {
  readonly command: string;
  readonly before: readonly string[];
}

/** Whether a printed line changes the shell it runs in (`. FILE` or `source FILE`). */
export function changesShell(command: string): boolean {
  return /^(\.|source)\s/.test(command);
}

/** The printed lines in order, each with the lines that changed the shell before it. */
export function printedSession(commands: readonly string[]): PrintedLine[] {
  const before: string[] = [];
  return commands.map((command) => {
    const line = { command, before: [...before] };
    if (changesShell(command)) before.push(command);
    return line;
  });
}

/**
 * The environment of a `bash` in `cwd`: the test process's, without any
 * `AETHER_*` variable of the person running the tests (a printed command
 * must work from what the sandbox printed alone).
 */
function shellEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(([name]) => !name.startsWith("AETHER_")),
  );
}

/**
 * Runs `line` with `bash -c` in `cwd` as pasted into a terminal there after
 * `line.before` (at most `timeoutMs`): the lines run in one shell, in order,
 * and stop at the first that fails (`set -e`).
 */
export async function runPrinted(
  line: PrintedLine,
  cwd: string,
  timeoutMs = 60_000,
): Promise<CommandRun> {
  const script = ["set -e", ...line.before, line.command].join("\n");
  try {
    const { stdout, stderr } = await run("bash", ["-c", script], {
      cwd,
      env: shellEnv(),
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

/**
 * The `AETHER_*` variables a `bash` in `cwd` holds after running `before`
 * (`. FILE` lines), read back from the shell itself, so a command run in
 * this process sees what it would see pasted after them.
 */
export async function aetherVariablesAfter(
  before: readonly string[],
  cwd: string,
): Promise<Record<string, string>> {
  const script = ["set -e", ...before, "env -0"].join("\n");
  const { stdout } = await run("bash", ["-c", script], { cwd, env: shellEnv() });
  const entries = stdout
    .split("\0")
    .filter((entry) => entry.startsWith("AETHER_"))
    .map((entry) => entry.split(/=(.*)/s).slice(0, 2) as [string, string]);
  return Object.fromEntries(entries);
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
