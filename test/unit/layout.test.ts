/**
 * The import rules of the layout (services/README.md, clients/README.md),
 * checked over the real import graph of every source file: what each folder
 * may import, so that the agent never reaches into the registrar and the pure
 * core stays free of I/O. A violation names the file, the import and the rule.
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");

/** What a process (the registrar, the agent) may import besides itself. */
const PROCESS_FOLDERS = [
  "gen",
  "services/common",
  "services/runtime",
  "services/sources",
  "services/process",
  "services/signing",
];

/** The npm packages the console (a browser bundle) may import. */
const CONSOLE_PACKAGES = [
  "@bufbuild/protobuf",
  "re2js",
  "@connectrpc/connect",
  "@connectrpc/connect-web",
  "preact",
];

/** The folders whose imports are ruled, and what each may import besides itself. */
const RULES: Record<
  string,
  {
    readonly folders: readonly string[];
    readonly node: boolean;
    /** npm packages it may import when it does no I/O; default {@link PURE_PACKAGES}. */
    readonly packages?: readonly string[];
  }
> = {
  "services/common": { folders: ["gen"], node: false },
  "services/runtime": { folders: ["services/common"], node: true },
  "services/sources": { folders: ["gen", "services/common", "services/runtime"], node: true },
  "services/process": { folders: ["services/common", "services/runtime"], node: true },
  "services/dev-pki": { folders: [], node: true },
  "services/signing": { folders: ["gen", "services/common", "services/runtime"], node: true },
  "services/registrar": {
    folders: PROCESS_FOLDERS,
    node: true,
  },
  "clients/agent": {
    folders: PROCESS_FOLDERS,
    node: true,
  },
  "clients/aetherctl": {
    folders: ["gen", "services/common", "services/runtime", "services/process", "services/signing"],
    node: true,
  },
  "clients/examples": { folders: ["gen"], node: true },
  // The console's tests (before `clients/console`: the first matching folder rules): its
  // packages, vitest and the renderer of its components; no Node built-ins either.
  "clients/console/test": {
    folders: ["clients/console", "gen", "services/common"],
    node: false,
    packages: [...CONSOLE_PACKAGES, "preact-render-to-string", "vitest"],
  },
  // The console runs in the browser: no Node built-ins, only its own packages.
  "clients/console": {
    folders: ["gen", "services/common"],
    node: false,
    packages: CONSOLE_PACKAGES,
  },
  "services/sandbox": {
    folders: [
      "gen",
      "services/common",
      "services/runtime",
      "services/sources",
      "services/process",
      "services/registrar",
      "services/dev-pki",
      "services/signing",
      "clients/agent",
      "clients/aetherctl",
    ],
    node: true,
  },
};

/** npm packages that are pure computation, allowed in services/common. */
const PURE_PACKAGES = ["@bufbuild/protobuf", "re2js"];

function sourceFiles(dir: string): string[] {
  return readdirSync(join(root, dir), { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    // Build configuration (`vite.config.ts`) runs in Node at build time: not a source.
    const source = /\.tsx?$/.test(entry.name) && !/\.d\.ts$|\.config\.ts$/.test(entry.name);
    return source ? [path] : [];
  });
}

/** Every module specifier a file imports or re-exports, statically or dynamically. */
function specifiers(text: string): string[] {
  const found: string[] = [];
  const patterns = [
    // `from` after a space, `}` or `*` (not inside a string such as `"from"`).
    /^\s*(?:import|export)\b[^;]*?[\s}*]from\s*["']([^"']+)["']/gms,
    /^\s*import\s*["']([^"']+)["']/gm,
    /\bimport\(\s*["']([^"']+)["']\s*\)/g,
  ];
  for (const pattern of patterns) {
    for (const match of text.matchAll(pattern)) found.push(match[1] as string);
  }
  return found;
}

/** The ruled folder a repository path is in, or its first two segments otherwise. */
function folderOf(path: string): string {
  const ruled = Object.keys(RULES).find(
    (folder) => path === folder || path.startsWith(`${folder}/`),
  );
  if (ruled !== undefined) return ruled;
  return path
    .split("/")
    .slice(0, path.startsWith("gen/") ? 1 : 2)
    .join("/");
}

/** The violations of one file's imports (its text read when not given), as sentences. */
function violations(file: string, text = readFileSync(join(root, file), "utf8")): string[] {
  const folder = folderOf(file);
  const rule = RULES[folder];
  if (rule === undefined) return [];
  const problems: string[] = [];
  for (const spec of specifiers(text)) {
    if (spec.startsWith(".")) {
      const target = relative(root, resolve(root, dirname(file), spec));
      const targetFolder = folderOf(target);
      if (targetFolder !== folder && !rule.folders.includes(targetFolder)) {
        problems.push(`${file} imports ${spec} (${targetFolder}): ${folder} may not import it`);
      }
    } else if (spec.startsWith("node:")) {
      if (!rule.node) problems.push(`${file} imports ${spec}: ${folder} does no I/O`);
    } else if (!rule.node) {
      const packages = rule.packages ?? PURE_PACKAGES;
      if (!packages.some((p) => spec === p || spec.startsWith(`${p}/`))) {
        problems.push(`${file} imports ${spec}: ${folder} imports only ${packages.join(", ")}`);
      }
    }
  }
  return problems;
}

describe("the layout's import rules", () => {
  const files = [...sourceFiles("services"), ...sourceFiles("clients")];

  it("covers every folder under services/ and clients/", () => {
    const folders = new Set(files.map((file) => file.split("/").slice(0, 2).join("/")));
    expect([...folders].filter((folder) => RULES[folder] === undefined)).toEqual([]);
  });

  it("holds for every source file", () => {
    expect(files.length).toBeGreaterThan(100);
    expect(files.flatMap((file) => violations(file))).toEqual([]);
  });

  it("catches a client that imports the registrar, and I/O or packages in the pure core", () => {
    expect(
      violations("clients/agent/x.ts", 'import { x } from "../../services/registrar/logger.js";'),
    ).toEqual([
      "clients/agent/x.ts imports ../../services/registrar/logger.js (services/registrar): clients/agent may not import it",
    ]);
    expect(
      violations(
        "services/common/x.ts",
        'export type {\n  A,\n} from "../runtime/a.js";\nconst m = await import("node:fs");\nimport "pino";',
      ),
    ).toEqual([
      "services/common/x.ts imports ../runtime/a.js (services/runtime): services/common may not import it",
      "services/common/x.ts imports pino: services/common imports only @bufbuild/protobuf, re2js",
      "services/common/x.ts imports node:fs: services/common does no I/O",
    ]);
    expect(
      violations("clients/agent/x.ts", 'import { y } from "../../services/common/y.js";'),
    ).toEqual([]);
    // A string "from" in an exported type is no import.
    expect(violations("services/common/x.ts", 'export type Field = "from" | "to";')).toEqual([]);
    expect(violations("services/common/x.ts", 'export {a}from"node:fs";')).toEqual([
      "services/common/x.ts imports node:fs: services/common does no I/O",
    ]);
  });
});
