/**
 * Replays a Dockerfile without Docker: each stage gets its own directory as
 * its root file system, and its COPY and RUN instructions are carried out
 * there (RUN through `sh -c` with the host's tools, which stand in for the
 * stage's base image). What the runtime stage ends up with is what the image
 * holds, so its entrypoints can be run from it.
 *
 * Only the instructions deploy/Dockerfile uses are understood; anything else
 * (a wildcard COPY, a shell-form ENTRYPOINT, an absolute path in RUN, a
 * `.dockerignore` pattern with wildcards) throws, so the file cannot drift
 * into something this replay would silently get wrong.
 */
import { execFile } from "node:child_process";
import { cp, mkdir, readFile, stat } from "node:fs/promises";
import { basename, dirname, join, posix, relative } from "node:path";
import { promisify } from "node:util";

const execFileAsync = promisify(execFile);

/** One instruction of a Dockerfile, continuation lines joined. */
export interface DockerInstruction {
  /** The instruction, upper-case (`COPY`, `RUN`, …). */
  readonly keyword: string;
  /** Everything after the keyword. */
  readonly args: string;
  /** The 1-based line it starts on. */
  readonly line: number;
}

/** A build stage: its base and its instructions. */
export interface DockerStage {
  /** The base image (or an earlier stage's name), ARGs substituted. */
  readonly from: string;
  /** The `AS` name, if any. */
  readonly name: string | undefined;
  /** The instructions after FROM. */
  readonly instructions: readonly DockerInstruction[];
}

/** What the runtime stage of a replayed image looks like. */
export interface ReplayedImage {
  /** The directory standing in for the runtime stage's `/`. */
  readonly root: string;
  /** The runtime stage's base image. */
  readonly baseImage: string;
  /** Its WORKDIR (an absolute path inside the image). */
  readonly workdir: string;
  /** Its ENV. */
  readonly env: Readonly<Record<string, string>>;
  /** Its USER, if set. */
  readonly user: string | undefined;
  /** Its ENTRYPOINT (exec form). */
  readonly entrypoint: readonly string[];
  /** Its CMD (exec form). */
  readonly cmd: readonly string[];
}

/** Options of {@link replayDockerfile}. */
export interface ReplayOptions {
  /** The Dockerfile. */
  readonly dockerfile: string;
  /** The build context (the `.` of `docker build -f … .`). */
  readonly context: string;
  /** An empty directory to build the stages in. */
  readonly work: string;
  /** Extra environment of every RUN (for example npm's offline preference). */
  readonly runEnv?: NodeJS.ProcessEnv;
  /** How long one RUN may take (default 240 s). */
  readonly runTimeoutMs?: number;
}

/** Splits Dockerfile text into instructions, joining `\` continuations and dropping comments. */
export function parseInstructions(text: string): DockerInstruction[] {
  const instructions: DockerInstruction[] = [];
  const lines = text.split("\n");
  let pending: { text: string; line: number } | undefined;
  lines.forEach((raw, index) => {
    const trimmed = raw.trim();
    if (trimmed.startsWith("#") || (trimmed === "" && pending === undefined)) return;
    const continued = trimmed.endsWith("\\");
    const part = continued ? trimmed.slice(0, -1).trim() : trimmed;
    pending =
      pending === undefined
        ? { text: part, line: index + 1 }
        : { text: `${pending.text} ${part}`.trim(), line: pending.line };
    if (continued) return;
    const match = /^(\S+)\s*(.*)$/s.exec(pending.text);
    if (match !== null) {
      instructions.push({
        keyword: (match[1] as string).toUpperCase(),
        args: (match[2] as string).trim(),
        line: pending.line,
      });
    }
    pending = undefined;
  });
  if (pending !== undefined) throw new Error(`line ${pending.line}: unterminated continuation`);
  return instructions;
}

/** Replaces `${NAME}` and `$NAME` with the values in `vars` (unknown names: empty). */
function substitute(text: string, vars: ReadonlyMap<string, string>): string {
  return text.replace(
    /\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (_all, braced: string | undefined, bare: string | undefined) =>
      vars.get((braced ?? bare) as string) ?? "",
  );
}

/** Splits a Dockerfile into its stages, substituting global ARGs into FROM. */
export function parseDockerfile(text: string): DockerStage[] {
  const globalArgs = new Map<string, string>();
  const stages: { from: string; name: string | undefined; instructions: DockerInstruction[] }[] =
    [];
  for (const instruction of parseInstructions(text)) {
    if (instruction.keyword === "FROM") {
      const words = instruction.args.split(/\s+/).filter((w) => !w.startsWith("--platform="));
      const [image, as, name] = words;
      if (image === undefined || (as !== undefined && (as.toUpperCase() !== "AS" || !name))) {
        throw new Error(`line ${instruction.line}: cannot read FROM ${instruction.args}`);
      }
      stages.push({ from: substitute(image, globalArgs), name, instructions: [] });
      continue;
    }
    const stage = stages.at(-1);
    if (stage === undefined) {
      if (instruction.keyword !== "ARG") {
        throw new Error(`line ${instruction.line}: ${instruction.keyword} before the first FROM`);
      }
      const [key, value = ""] = instruction.args.split("=", 2) as [string, string?];
      globalArgs.set(key.trim(), value.trim());
      continue;
    }
    stage.instructions.push(instruction);
  }
  if (stages.length === 0) throw new Error("the Dockerfile has no FROM");
  return stages;
}

/** Parses ENV's `KEY=value KEY2="value 2"` form. */
function parseEnv(args: string, line: number): [string, string][] {
  const pairs: [string, string][] = [];
  const pattern = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*"|\S*)\s*/gy;
  let match: RegExpExecArray | null = pattern.exec(args);
  let consumed = 0;
  while (match !== null) {
    const raw = match[2] as string;
    pairs.push([match[1] as string, raw.startsWith('"') ? (JSON.parse(raw) as string) : raw]);
    consumed = pattern.lastIndex;
    match = pattern.exec(args);
  }
  if (pairs.length === 0 || consumed !== args.length) {
    throw new Error(`line ${line}: only ENV KEY=value pairs are supported, got ENV ${args}`);
  }
  return pairs;
}

/** Parses the JSON (exec) form ENTRYPOINT and CMD must use in a shell-less image. */
function parseExecForm(keyword: string, args: string, line: number): string[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(args);
  } catch {
    throw new Error(
      `line ${line}: ${keyword} must use the exec (JSON) form: the image has no shell`,
    );
  }
  if (!Array.isArray(parsed) || !parsed.every((p) => typeof p === "string")) {
    throw new Error(`line ${line}: ${keyword} must be a JSON array of strings`);
  }
  return parsed as string[];
}

/** Splits leading `--flag=value` words off an instruction's arguments. */
function splitFlags(args: string): { flags: Map<string, string>; rest: string } {
  const flags = new Map<string, string>();
  let rest = args;
  for (;;) {
    const match = /^--([a-z-]+)(?:=(\S*))?\s+/.exec(rest);
    if (match === null) return { flags, rest };
    flags.set(match[1] as string, match[2] ?? "");
    rest = rest.slice(match[0].length);
  }
}

/**
 * A `.dockerignore` matcher for the subset used here: `*` (everything) and
 * literal paths (a directory covers what is under it), each optionally
 * negated with `!`; the last matching pattern wins.
 */
export function dockerignoreFilter(text: string): (path: string) => boolean {
  const rules = text
    .split("\n")
    .map((l) => l.trim())
    .filter((l) => l !== "" && !l.startsWith("#"))
    .map((l) => {
      const include = l.startsWith("!");
      const pattern = (include ? l.slice(1) : l).replace(/^\/+|\/+$/g, "");
      if (pattern !== "*" && /[*?[\]]/.test(pattern)) {
        throw new Error(`.dockerignore pattern ${l} is not supported by the replay`);
      }
      return { include, pattern };
    });
  return (path) => {
    let included = true;
    for (const rule of rules) {
      if (rule.pattern === "*" || path === rule.pattern || path.startsWith(`${rule.pattern}/`)) {
        included = rule.include;
      }
    }
    return included;
  };
}

/** True when `path` exists and is a directory. */
async function isDirectory(path: string): Promise<boolean> {
  return (await stat(path)).isDirectory();
}

/** Where an image path lands under a stage root, relative paths resolved against `workdir`. */
function inRoot(root: string, workdir: string, path: string): string {
  const absolute = posix.isAbsolute(path) ? path : posix.join(workdir, path);
  return join(root, posix.normalize(absolute));
}

/** Runs one stage's instructions in `root`. */
async function replayStage(
  stage: DockerStage,
  root: string,
  options: ReplayOptions,
  stageRoots: ReadonlyMap<string, string>,
  included: (path: string) => boolean,
): Promise<Omit<ReplayedImage, "root" | "baseImage">> {
  let workdir = "/";
  const env = new Map<string, string>();
  const args = new Map<string, string>();
  let user: string | undefined;
  let entrypoint: string[] = [];
  let cmd: string[] = [];
  for (const { keyword, args: text, line } of stage.instructions) {
    const where = `${options.dockerfile}:${line}`;
    switch (keyword) {
      case "WORKDIR":
        workdir = posix.isAbsolute(text) ? text : posix.join(workdir, text);
        await mkdir(inRoot(root, "/", workdir), { recursive: true });
        break;
      case "ENV":
        for (const [key, value] of parseEnv(text, line)) env.set(key, value);
        break;
      case "ARG": {
        const [key, value = ""] = text.split("=", 2) as [string, string?];
        args.set(key.trim(), value.trim());
        break;
      }
      case "USER":
        user = text;
        break;
      case "LABEL":
      case "EXPOSE":
        break;
      case "ENTRYPOINT":
        entrypoint = parseExecForm(keyword, text, line);
        break;
      case "CMD":
        cmd = parseExecForm(keyword, text, line);
        break;
      case "COPY": {
        const { flags, rest } = splitFlags(text);
        for (const flag of flags.keys()) {
          if (!["from", "chown", "link"].includes(flag)) {
            throw new Error(`${where}: COPY --${flag} is not supported by the replay`);
          }
        }
        const words = rest.startsWith("[") ? (JSON.parse(rest) as string[]) : rest.split(/\s+/);
        const dest = words.pop();
        if (dest === undefined || words.length === 0)
          throw new Error(`${where}: COPY needs a source`);
        if (words.some((w) => /[*?[\]]/.test(w))) {
          throw new Error(`${where}: wildcard COPY sources are not supported by the replay`);
        }
        const fromStage = flags.get("from");
        const sourceRoot = fromStage === undefined ? undefined : stageRoots.get(fromStage);
        if (fromStage !== undefined && sourceRoot === undefined) {
          throw new Error(`${where}: COPY --from=${fromStage}: no earlier stage has that name`);
        }
        const toDirectory = dest.endsWith("/") || words.length > 1;
        const target = inRoot(root, workdir, dest);
        for (const source of words) {
          let from: string;
          if (sourceRoot === undefined) {
            const rel = posix.normalize(source).replace(/^\.\/?/, "");
            if (rel.startsWith("..") || posix.isAbsolute(rel) || !included(rel)) {
              throw new Error(`${where}: ${source} is outside the build context or .dockerignored`);
            }
            from = join(options.context, rel);
          } else {
            from = inRoot(sourceRoot, "/", source);
          }
          const directory = await isDirectory(from).catch(() => {
            throw new Error(`${where}: COPY source ${source} does not exist`);
          });
          const to = directory || !toDirectory ? target : join(target, basename(from));
          await mkdir(directory ? to : dirname(to), { recursive: true });
          await cp(from, to, {
            recursive: true,
            verbatimSymlinks: true,
            filter: (path) =>
              sourceRoot !== undefined ||
              included(relative(options.context, path).split("\\").join("/")),
          });
        }
        break;
      }
      case "RUN": {
        const { flags, rest } = splitFlags(text);
        for (const [flag, value] of flags) {
          if (flag !== "mount" || !value.startsWith("type=cache,")) {
            throw new Error(`${where}: RUN --${flag}=${value} is not supported by the replay`);
          }
        }
        if (rest.startsWith("[")) throw new Error(`${where}: use the shell form of RUN`);
        if (rest.split(/\s+/).some((word) => word.startsWith("/"))) {
          throw new Error(`${where}: RUN uses an absolute path, which the replay cannot map`);
        }
        try {
          await execFileAsync("sh", ["-c", rest], {
            cwd: inRoot(root, "/", workdir),
            env: {
              ...process.env,
              ...Object.fromEntries(args),
              ...Object.fromEntries(env),
              ...options.runEnv,
            },
            maxBuffer: 64 * 1024 * 1024,
            timeout: options.runTimeoutMs ?? 240_000,
          });
        } catch (error) {
          const failure = error as Error & { stdout?: string; stderr?: string; code?: unknown };
          const tail = `${failure.stdout ?? ""}\n${failure.stderr ?? ""}`.trim().slice(-4_000);
          throw new Error(`${where}: RUN ${rest} failed (exit ${String(failure.code)}):\n${tail}`);
        }
        break;
      }
      default:
        throw new Error(`${where}: ${keyword} is not supported by the replay`);
    }
  }
  return { workdir, env: Object.fromEntries(env), user, entrypoint, cmd };
}

/**
 * Builds every stage of `options.dockerfile` under `options.work` and
 * describes the last (runtime) stage.
 */
export async function replayDockerfile(options: ReplayOptions): Promise<ReplayedImage> {
  const stages = parseDockerfile(await readFile(options.dockerfile, "utf8"));
  const ignoreFile = `${options.dockerfile}.dockerignore`;
  const ignoreText = await readFile(ignoreFile, "utf8").catch(() =>
    readFile(join(options.context, ".dockerignore"), "utf8").catch(() => ""),
  );
  const included = dockerignoreFilter(ignoreText);
  const stageRoots = new Map<string, string>();
  let last: ReplayedImage | undefined;
  for (const [index, stage] of stages.entries()) {
    const root = join(options.work, `stage-${index}${stage.name ? `-${stage.name}` : ""}`);
    const earlier = stageRoots.get(stage.from);
    if (earlier !== undefined) await cp(earlier, root, { recursive: true, verbatimSymlinks: true });
    else await mkdir(root, { recursive: true });
    const described = await replayStage(stage, root, options, stageRoots, included);
    stageRoots.set(String(index), root);
    if (stage.name !== undefined) stageRoots.set(stage.name, root);
    last = { root, baseImage: stage.from, ...described };
  }
  return last as ReplayedImage;
}

/**
 * The host command that runs `argv` the way the image would: `argv[0]` is
 * looked up on the image's PATH (unless absolute) inside its root, and a
 * `#!` interpreter that is the image's node is replaced by `nodeOnHost` (a
 * node of the image's major version; this process's node by default).
 * Throws when the program is missing or needs anything else.
 */
export async function imageCommand(
  image: ReplayedImage,
  nodePathInImage: string,
  argv: readonly string[],
  nodeOnHost: string = process.execPath,
): Promise<{ command: string; args: string[]; script: string }> {
  const [program, ...rest] = argv;
  if (program === undefined) throw new Error("no program to run");
  const candidates = program.includes("/")
    ? [program]
    : (image.env.PATH ?? "").split(":").map((dir) => posix.join(dir, program));
  for (const candidate of candidates) {
    const onHost = inRoot(image.root, image.workdir, candidate);
    const found = await stat(onHost).catch(() => undefined);
    if (found === undefined || !found.isFile()) continue;
    if ((found.mode & 0o111) === 0) throw new Error(`${candidate} is not executable in the image`);
    const firstLine = (await readFile(onHost, "utf8")).split("\n", 1)[0] ?? "";
    const interpreter = firstLine.startsWith("#!") ? firstLine.slice(2).trim() : undefined;
    if (interpreter !== nodePathInImage) {
      throw new Error(`${candidate} starts with ${firstLine}, not #!${nodePathInImage}`);
    }
    return { command: nodeOnHost, args: [onHost, ...rest], script: candidate };
  }
  throw new Error(`${program} is not in the image (looked at ${candidates.join(", ")})`);
}
