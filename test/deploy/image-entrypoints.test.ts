/**
 * deploy/Dockerfile without Docker: the Dockerfile is replayed stage by stage
 * in a temporary directory (the build stage's `npm ci` and `tsc`, the
 * production-only `npm ci --omit=dev`, the runtime stage's COPYs), and the
 * image's programs are run from the result the way the image runs them: the
 * ENTRYPOINT and CMD, the executables on its PATH, the commands the
 * manifests give. The image holds no dev dependency and no TypeScript, and
 * its programs write nothing to the (read-only in a pod) image file system,
 * nor to HOME or the temp directory.
 *
 * The build needs the npm cache (warm in CI: `npm ci` ran just before) or the
 * registry; it takes about a minute.
 */
import { type ChildProcess, execFile, execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdir, mkdtemp, readdir, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { waitFor } from "../support/wait.js";
import { imageCommand, type ReplayedImage, replayDockerfile } from "./dockerfile-replay.js";
import { ROOT } from "./rendered-manifests.js";

const execFileAsync = promisify(execFile);

const DOCKERFILE = join(ROOT, "deploy/Dockerfile");
/** Where the runtime image (distroless nodejs24) keeps node: the programs' `#!` line. */
const NODE_IN_IMAGE = "/nodejs/bin/node";
/** The Node.js major version of the image's base. */
const IMAGE_NODE_MAJOR = 24;
/**
 * A node of the image's major version on this host: this process's when it
 * matches, otherwise the one scripts/node24.sh fetches (the suite also runs
 * on Node 20, which the package still supports).
 */
function imageNodeOnHost(): string {
  if (Number(process.versions.node.split(".")[0]) === IMAGE_NODE_MAJOR) return process.execPath;
  const dir = execFileSync("bash", [join(ROOT, "scripts/node24.sh")], { encoding: "utf8" }).trim();
  return join(dir, "node");
}
let nodeOnHost: string;
/** The three programs and the first line of their usage text. */
const PROGRAMS = {
  "aether-registrar": "Usage: aether-registrar --cluster NAME [flags]",
  "aether-agent": "Usage: aether-agent --registrar URL --cluster NAME",
  aetherctl: "Usage: aetherctl [--registrar URL]",
} as const;

let work: string;
let image: ReplayedImage;
/** HOME and TMPDIR of the programs: they must stay empty. */
let home: string;
let scratch: string;
/** What the image root held right after the build. */
let builtTree: Map<string, string>;

/** Every file under `dir` (symlinks not followed) with its size and modification time. */
async function tree(dir: string): Promise<Map<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  const files = new Map<string, string>();
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    const info = await stat(path).catch(() => undefined);
    files.set(
      relative(dir, path),
      info === undefined ? "dangling" : `${info.size}:${info.mtimeMs}`,
    );
  }
  return files;
}

/** The environment of a program in the image: its ENV, with HOME and TMPDIR that must stay empty. */
function imageEnv(): NodeJS.ProcessEnv {
  const { PATH: _imagePath, ...env } = image.env;
  return { PATH: process.env.PATH, ...env, HOME: home, TMPDIR: scratch };
}

/** Runs `argv` as the image would and resolves with its exit code and output. */
async function runInImage(
  argv: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  const { command, args } = await imageCommand(image, NODE_IN_IMAGE, argv, nodeOnHost);
  try {
    const { stdout, stderr } = await execFileAsync(command, args, {
      cwd: join(image.root, image.workdir),
      env: imageEnv(),
      timeout: 30_000,
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failure = error as { code?: number; stdout?: string; stderr?: string };
    return { code: failure.code ?? -1, stdout: failure.stdout ?? "", stderr: failure.stderr ?? "" };
  }
}

/** A long-running program of the image, with its JSON log lines. */
interface Running {
  readonly child: ChildProcess;
  readonly logs: Record<string, unknown>[];
  readonly exited: Promise<number | null>;
}

const running = new Set<ChildProcess>();

/** Starts `argv` as the image would and resolves once it logs `message` (JSON logs on stderr). */
async function startInImage(
  argv: readonly string[],
  message: string,
): Promise<Running & { line: Record<string, unknown> }> {
  const { command, args } = await imageCommand(image, NODE_IN_IMAGE, argv, nodeOnHost);
  const child = spawn(command, args, {
    cwd: join(image.root, image.workdir),
    env: imageEnv(),
    stdio: ["ignore", "ignore", "pipe"],
  });
  running.add(child);
  const exited = once(child, "exit").then(([code]) => {
    running.delete(child);
    return code as number | null;
  });
  const logs: Record<string, unknown>[] = [];
  const other: string[] = [];
  createInterface({ input: child.stderr as NodeJS.ReadableStream }).on("line", (text) => {
    try {
      logs.push(JSON.parse(text) as Record<string, unknown>);
    } catch {
      other.push(text);
    }
  });
  await Promise.race([
    waitFor(() => logs.some((l) => l.msg === message), 20_000, `${argv[0]} to log "${message}"`),
    exited.then((code) => {
      throw new Error(
        `${argv[0]} exited with ${code} before logging "${message}": ${other.join("\n")}`,
      );
    }),
  ]);
  return {
    child,
    logs,
    exited,
    line: logs.find((l) => l.msg === message) as Record<string, unknown>,
  };
}

/** The `command` of the one container of a manifest under deploy/. */
async function manifestCommand(path: string): Promise<string[]> {
  const manifest = parse(await readFile(join(ROOT, path), "utf8")) as {
    spec: { template: { spec: { containers: { command: string[] }[] } } };
  };
  const [container, ...others] = manifest.spec.template.spec.containers;
  expect(others).toEqual([]);
  return container?.command ?? [];
}

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), "aether-image-"));
  home = join(work, "home");
  scratch = join(work, "tmp");
  await mkdir(home);
  await mkdir(scratch);
  try {
    image = await replayDockerfile({
      dockerfile: DOCKERFILE,
      context: ROOT,
      work: join(work, "build"),
      // The npm cache is warm in CI (npm ci ran just before); use it first.
      runEnv: { npm_config_prefer_offline: "true", npm_config_update_notifier: "false" },
    });
  } catch (error) {
    throw new Error(
      `replaying deploy/Dockerfile failed (an npm ci failure here means neither the npm cache nor the registry had a package): ${(error as Error).message}`,
    );
  }
  builtTree = await tree(image.root);
  nodeOnHost = imageNodeOnHost();
}, 300_000);

afterAll(async () => {
  for (const child of running) child.kill("SIGKILL");
  if (work !== undefined) await rm(work, { recursive: true, force: true });
});

describe("the container image (deploy/Dockerfile, replayed without Docker)", () => {
  it("runs the programs on the image's Node.js major version here, so the replay is faithful", async () => {
    expect(image.baseImage).toContain(`nodejs${IMAGE_NODE_MAJOR}`);
    const { stdout } = await execFileAsync(nodeOnHost, ["--version"]);
    expect(stdout.trim()).toMatch(new RegExp(`^v${IMAGE_NODE_MAJOR}\\.`));
  });

  it("runs as the non-root user 65532 from /app, in production mode", () => {
    expect(image.user).toBe("65532:65532");
    expect(image.workdir).toBe("/app");
    expect(image.env.NODE_ENV).toBe("production");
  });

  it.each(Object.entries(PROGRAMS))(
    "%s --help runs from the image's PATH",
    async (program, usage) => {
      const result = await runInImage([program, "--help"]);
      expect(result.stderr).toBe("");
      expect(result.code).toBe(0);
      expect(result.stdout.split("\n")[0]).toContain(usage);
    },
  );

  it("the default ENTRYPOINT and CMD print the registrar's help", async () => {
    expect(image.entrypoint).toEqual(["/app/bin/aether-registrar"]);
    const result = await runInImage([...image.entrypoint, ...image.cmd]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(PROGRAMS["aether-registrar"]);
  });

  it.each([
    ["deploy/base/registrar-deployment.yaml", "aether-registrar"],
    ["deploy/components/agent/agent-daemonset.yaml", "aether-agent"],
  ] as const)("the command in %s is the image's %s", async (path, program) => {
    const command = await manifestCommand(path);
    const result = await runInImage([...command, "--help"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toContain(PROGRAMS[program]);
  });

  it("holds production dependencies only, and compiled JavaScript, not TypeScript", async () => {
    const pkg = JSON.parse(await readFile(join(ROOT, "package.json"), "utf8")) as {
      dependencies: Record<string, string>;
    };
    const lock = JSON.parse(await readFile(join(ROOT, "package-lock.json"), "utf8")) as {
      packages: Record<string, { dev?: boolean }>;
    };
    const present = async (path: string) =>
      (await stat(join(image.root, "app", path)).catch(() => undefined)) !== undefined;
    for (const tool of ["vitest", "typescript", "@biomejs/biome", "@bufbuild/buf"]) {
      expect(await present(`node_modules/${tool}`), tool).toBe(false);
    }
    // Everything the lockfile marks dev-only (needed by no production dependency) is absent.
    const devOnly = Object.entries(lock.packages).filter(
      ([path, entry]) => path !== "" && entry.dev,
    );
    expect(devOnly.length).toBeGreaterThan(0);
    for (const [path] of devOnly) expect(await present(path), path).toBe(false);
    for (const name of Object.keys(pkg.dependencies)) {
      expect(await present(`node_modules/${name}`), name).toBe(true);
    }
    const app = [...builtTree.keys()].filter(
      (p) => p.startsWith("app/") && !p.startsWith("app/node_modules"),
    );
    expect(app.filter((p) => p.endsWith(".ts"))).toEqual([]);
    expect(app).toContain("app/dist/services/registrar/main.js");
    expect(app.filter((p) => /^app\/(services|clients|gen|test|bench)\//.test(p))).toEqual([]);
  });

  it("serves: a registrar, aetherctl status against it, an agent following it; then stops on SIGTERM", async () => {
    const state = join(scratch, "..", "agent-state");
    const registrar = await startInImage(
      [
        "aether-registrar",
        "--cluster",
        "hub",
        "--store",
        "memory",
        "--listen",
        "127.0.0.1:0",
        "--admin-listen",
        "127.0.0.1:0",
        "--log-level",
        "info",
      ],
      "registrar serving",
    );
    const url = registrar.line.url as string;
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
    // The admin port is served by a worker thread: its module is in the image too.
    const admin = registrar.line.adminUrl as string;
    expect((await fetch(`${admin}/healthz`)).status).toBe(200);
    expect(await (await fetch(`${admin}/readyz`)).text()).toBe("ready\n");

    const status = await runInImage(["aetherctl", "--registrar", url, "status"]);
    expect(status.stderr).toBe("");
    expect(status.code).toBe(0);

    const agent = await startInImage(
      [
        "aether-agent",
        "--registrar",
        url,
        "--cluster",
        "east",
        "--control-cluster",
        "hub",
        "--deps",
        "shop/cart",
        "--cache-dir",
        join(state, "cache"),
        "--out",
        join(state, "routes.json"),
        "--listen",
        "127.0.0.1:0",
      ],
      "agent serving",
    );
    const agentUrl = agent.line.url as string;
    await waitFor(
      async () => (await fetch(`${agentUrl}/readyz`)).status === 200,
      20_000,
      "the agent to be ready",
    );
    expect((await fetch(`${agentUrl}/healthz`)).status).toBe(200);

    agent.child.kill("SIGTERM");
    expect(await agent.exited).toBe(0);
    registrar.child.kill("SIGTERM");
    expect(await registrar.exited).toBe(0);
  }, 60_000);

  it("its programs wrote nothing to the image, HOME or the temp directory (read-only root works)", async () => {
    expect(await readdir(home)).toEqual([]);
    expect(await readdir(scratch)).toEqual([]);
    const now = await tree(image.root);
    const changed = [...new Set([...builtTree.keys(), ...now.keys()])].filter(
      (path) => builtTree.get(path) !== now.get(path),
    );
    expect(changed).toEqual([]);
  });
});
