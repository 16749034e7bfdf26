import { mkdir, mkdtemp, rename, rm, symlink, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import { createDirSource, type DirSourceOptions } from "../../services/sources/dir-source.js";
import type { ObjectSource } from "../../services/sources/object-source.js";
import { captureLogger } from "../support/capture-logger.js";
import { waitFor } from "../support/wait.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Creates a temporary directory holding `files` (relative path → content). */
async function tree(files: Record<string, string>): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), "dir-source-"));
  cleanups.push(() => rm(root, { recursive: true, force: true }));
  for (const [path, content] of Object.entries(files)) await put(root, path, content);
  return root;
}

/**
 * Writes a file the way editors and many tools replace one: a hidden
 * temporary file renamed over it, so that no scan sees it half written.
 */
async function put(root: string, path: string, content: string): Promise<void> {
  const target = join(root, path);
  await mkdir(dirname(target), { recursive: true });
  const temporary = join(dirname(target), `.${basename(target)}.tmp`);
  await writeFile(temporary, content);
  await rename(temporary, target);
}

const namespace = (name: string) => `apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ${name}\n`;
const service = (ns: string, name: string, port = 80) =>
  `apiVersion: v1\nkind: Service\nmetadata:\n  namespace: ${ns}\n  name: ${name}\nspec:\n  ports:\n  - port: ${port}\n`;

/** `Kind/name` of every object of the snapshot, in order. */
const ids = (source: ObjectSource) =>
  source.snapshot().map((o: KubeObject) => `${o.kind}/${o.metadata?.name}`);

async function started(options: DirSourceOptions): Promise<ObjectSource> {
  const source = createDirSource({ debounceMs: 20, ...options });
  cleanups.push(() => source.stop());
  source.start();
  await source.whenSynced();
  return source;
}

function countChanges(source: ObjectSource): { count: number } {
  const counter = { count: 0 };
  source.onChange(() => counter.count++);
  return counter;
}

describe("dir source", () => {
  it("reads nested multi-document files in path order, skipping what is not a manifest", async () => {
    const root = await tree({
      "b.yaml": `${namespace("b")}---\n---\n${service("b", "web")}`,
      "a/z.yml": service("a", "api"),
      "a/c.json": JSON.stringify({
        apiVersion: "v1",
        kind: "List",
        items: [{ apiVersion: "v1", kind: "Namespace", metadata: { name: "a" } }],
      }),
      ".hidden.yaml": namespace("hidden"),
      "a/.git/config.yaml": namespace("git"),
      "notes.txt": namespace("txt"),
      "b.yaml~": namespace("backup"),
      "a/.z.yml.swp": "binary junk",
    });
    const source = await started({ path: root });
    expect(source.name).toBe(`dir:${root}`);
    expect(source.synced).toBe(true);
    expect(ids(source)).toEqual(["Namespace/a", "Service/api", "Namespace/b", "Service/web"]);
    expect(source.problems()).toEqual([]);
    expect(source.snapshot()[1]).toEqual({
      apiVersion: "v1",
      kind: "Service",
      metadata: { namespace: "a", name: "api" },
      spec: { ports: [{ port: 80 }] },
    });
  });

  it("follows files added, edited and deleted, in new subdirectories too", async () => {
    const root = await tree({ "one.yaml": namespace("one") });
    const source = await started({ path: root });
    const changes = countChanges(source);

    await put(root, "deep/er/two.yaml", namespace("two"));
    await waitFor(() => ids(source).includes("Namespace/two"), 5_000, "the new file");
    await waitFor(() => changes.count === 1, 5_000, "one change");

    await put(root, "one.yaml", `${namespace("one")}---\n${service("one", "svc")}`);
    await waitFor(() => ids(source).includes("Service/svc"), 5_000, "the edit");
    await waitFor(() => changes.count === 2, 5_000, "two changes");

    await put(root, "deep/er/two.yaml", `${namespace("two")}---\n${service("two", "deep")}`);
    await waitFor(() => ids(source).includes("Service/deep"), 5_000, "the nested edit");
    await waitFor(() => changes.count === 3, 5_000, "three changes");

    // Deleting a file that replaced another by a rename (Node 20's recursive
    // fs.watch misses this on Linux; the per-directory watches do not).
    await rm(join(root, "one.yaml"));
    await waitFor(() => ids(source).join() === "Namespace/two,Service/deep", 5_000, "the deletion");
    await rm(join(root, "deep"), { recursive: true });
    await waitFor(() => ids(source).length === 0, 5_000, "the directory's deletion");
    await waitFor(() => changes.count === 5, 5_000, "five changes");

    // A directory created again at the same path is watched again.
    await put(root, "deep/er/three.yaml", namespace("three"));
    await waitFor(() => ids(source).join() === "Namespace/three", 5_000, "the new directory");
    await put(root, "deep/er/three.yaml", namespace("four"));
    await waitFor(() => ids(source).join() === "Namespace/four", 5_000, "an edit in it");
    await waitFor(() => changes.count === 7, 5_000, "seven changes");
  });

  it("does not notify when a file is touched or rewritten with the same content", async () => {
    const { logger, lines } = captureLogger();
    const root = await tree({ "svc.yaml": service("a", "s"), "other.yaml": namespace("a") });
    const source = await started({ path: root, logger });
    const changes = countChanges(source);
    const rescans = () =>
      lines.filter((l) => l.msg === "rescanned" && (l.reread as string[]).includes("svc.yaml"));
    const initial = rescans().length;

    const future = new Date(Date.now() + 60_000);
    await utimes(join(root, "svc.yaml"), future, future);
    await waitFor(() => rescans().length === initial + 1, 5_000, "the touched file to be re-read");
    await put(root, "svc.yaml", service("a", "s"));
    await waitFor(
      () => rescans().length === initial + 2,
      5_000,
      "the rewritten file to be re-read",
    );
    await new Promise((resolve) => setImmediate(resolve)); // where a notification would run
    expect(
      rescans()
        .slice(initial)
        .map((l) => l.changed),
    ).toEqual([false, false]);
    expect(changes.count).toBe(0);

    await put(root, "svc.yaml", service("a", "s", 81));
    await waitFor(() => changes.count === 1, 5_000, "a real change to notify");
  });

  it("reports a broken file with its line, keeps its last good objects, and clears when fixed", async () => {
    const { logger, lines } = captureLogger();
    const root = await tree({
      "routes/r.yaml": `${namespace("r")}---\n${service("r", "kept")}`,
      "never.yaml": "kind: [unclosed\n",
      "other.yaml": namespace("other"),
    });
    const source = await started({ path: root, logger });
    expect(ids(source)).toEqual(["Namespace/other", "Namespace/r", "Service/kept"]);
    expect(source.problems().map((p) => p.where)).toEqual(["never.yaml:2"]);

    await put(
      root,
      "routes/r.yaml",
      `${namespace("r")}---\n${service("r", "new")} misindented: 1\n`,
    );
    await waitFor(() => source.problems().length === 2, 5_000, "the broken file's problem");
    const problem = source.problems().find((p) => p.where.startsWith("routes/r.yaml:"));
    expect(problem?.where).toBe("routes/r.yaml:14");
    expect(problem?.message).toBe(
      "YAML error: All mapping items must start at the same column (column 1)",
    );
    expect(ids(source)).toEqual(["Namespace/other", "Namespace/r", "Service/kept"]);
    const warnings = lines.filter((l) => l.level === 40 && l.where === "routes/r.yaml:14");
    expect(warnings).toHaveLength(1);

    // Other files still follow while one is broken.
    await put(root, "other.yaml", namespace("other2"));
    await waitFor(() => ids(source).includes("Namespace/other2"), 5_000, "the other file");
    expect(source.problems()).toHaveLength(2);

    // A document that is not a Kubernetes object also holds the file back.
    await put(root, "routes/r.yaml", `${namespace("r")}---\napiVersion: v1\nkind: Service\n`);
    await waitFor(
      () => source.problems().some((p) => p.message === "document 2 Service has no metadata"),
      5_000,
      "the invalid object's problem",
    );
    expect(source.problems().find((p) => p.where.startsWith("routes/"))?.where).toBe(
      "routes/r.yaml:6",
    );
    expect(ids(source)).toContain("Service/kept");

    await put(root, "routes/r.yaml", service("r", "fixed"));
    await put(root, "never.yaml", namespace("never"));
    await waitFor(() => source.problems().length === 0, 5_000, "the problems to clear");
    expect(ids(source)).toEqual(["Namespace/never", "Namespace/other2", "Service/fixed"]);
  });

  it("keeps the first of two definitions of the same object and reports the other", async () => {
    const root = await tree({
      "a.yaml": service("x", "dup", 1),
      "b/c.yaml": `${namespace("x")}---\n${service("x", "dup", 2)}`,
    });
    const source = await started({ path: root });
    expect(ids(source)).toEqual(["Service/dup", "Namespace/x"]);
    expect(source.snapshot()[0]?.spec).toEqual({ ports: [{ port: 1 }] });
    expect(source.problems()).toEqual([
      {
        where: "b/c.yaml:6",
        message: "Service x/dup is also defined at a.yaml:1; this copy is ignored",
      },
    ]);
  });

  it("follows a ConfigMap volume's ..data symlink swaps", async () => {
    const root = await tree({});
    // The layout the kubelet's atomic writer makes: a timestamped directory,
    // `..data` pointing at it, and each key a link through `..data`.
    const writeVersion = async (version: string, content: string) => {
      await put(root, `..${version}/routes.yaml`, content);
      await symlink(`..${version}`, join(root, "..data_tmp"));
      await rename(join(root, "..data_tmp"), join(root, "..data"));
    };
    await writeVersion("2026_01_01_00_00_00.1", `${namespace("cm")}---\n${service("cm", "v1")}`);
    await symlink("..data/routes.yaml", join(root, "routes.yaml"));
    const source = await started({ path: root });
    expect(ids(source)).toEqual(["Namespace/cm", "Service/v1"]);

    await writeVersion("2026_01_01_00_00_01.2", `${namespace("cm")}---\n${service("cm", "v2")}`);
    await rm(join(root, "..2026_01_01_00_00_00.1"), { recursive: true });
    await waitFor(() => ids(source).includes("Service/v2"), 5_000, "the first swap");

    await writeVersion("2026_01_01_00_00_02.3", service("cm", "v3"));
    await rm(join(root, "..2026_01_01_00_00_01.2"), { recursive: true });
    await waitFor(() => ids(source).join() === "Service/v3", 5_000, "the second swap");
    expect(source.problems()).toEqual([]);
  });

  it("does not follow links out of its directory unless told to, and never quotes content", async () => {
    const outside = await tree({
      "secret.yaml": service("outside", "leaked"),
      "dir/other.yaml": service("outside", "also-leaked"),
    });
    const root = await tree({
      "a.yaml": namespace("a"),
      "inner/b.yaml": service("a", "b"),
      "junk.yaml": "token-abc123-do-not-print\n",
    });
    await symlink(join(outside, "secret.yaml"), join(root, "escape.yaml"));
    await symlink(join(outside, "dir"), join(root, "escape-dir"));
    await symlink("inner/b.yaml", join(root, "inside-link.yaml"));
    const { logger, lines } = captureLogger();
    const source = await started({ path: root, logger });
    // The link inside the directory is read (b twice: the first by path keeps it).
    expect(ids(source)).toEqual(["Namespace/a", "Service/b"]);
    const problems = source.problems();
    expect(problems).toEqual(
      expect.arrayContaining([
        {
          where: "escape.yaml",
          message: "a symbolic link to a path outside the source directory; it is not followed",
        },
        {
          where: "escape-dir",
          message: "a symbolic link to a path outside the source directory; it is not followed",
        },
        { where: "junk.yaml:1", message: "document 1 is a string, not a Kubernetes object" },
      ]),
    );
    const printed = JSON.stringify([problems, lines]);
    expect(printed).not.toContain("token-abc123");
    expect(printed).not.toContain("leaked");

    const followed = await started({ path: root, linksOutside: true });
    expect(ids(followed)).toEqual(
      expect.arrayContaining(["Service/leaked", "Service/also-leaked", "Service/b"]),
    );
  });

  it("polls instead of watching when asked to", async () => {
    const root = await tree({ "a.yaml": namespace("a") });
    const source = await started({ path: root, watch: false, pollIntervalMs: 25 });
    await put(root, "sub/b.yaml", namespace("b"));
    await rm(join(root, "a.yaml"));
    await waitFor(() => ids(source).join() === "Namespace/b", 5_000, "the polled changes");
  });

  it("fails whenSynced, naming the path, when the directory does not exist or is a file", async () => {
    const root = await tree({ "file.yaml": namespace("f") });
    for (const [path, pattern] of [
      [join(root, "missing"), /does not exist/],
      [join(root, "file.yaml"), /is not a directory/],
    ] as const) {
      const source = createDirSource({ path });
      cleanups.push(() => source.stop());
      source.start();
      await expect(source.whenSynced()).rejects.toThrow(pattern);
      await expect(source.whenSynced()).rejects.toThrow(path);
      expect(source.synced).toBe(false);
      expect(source.problems()).toEqual([{ where: path, message: expect.stringContaining(path) }]);
    }
  });

  it("rejects whenSynced when stopped before the first scan, and cannot start again", async () => {
    const root = await tree({ "a.yaml": namespace("a") });
    const source = createDirSource({ path: root });
    source.start();
    await source.stop();
    await expect(source.whenSynced()).rejects.toThrow(/stopped/);
    expect(() => source.start()).toThrow(/stopped/);
  });
});
