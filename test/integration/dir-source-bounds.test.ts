/**
 * A directory source over input built to flood it: four copies of a large
 * manifest and more broken files than the problem list holds. Its problems
 * stay bounded (one per duplicated file, the first hundred plus a count)
 * and so do its log lines.
 */
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { omittedCount } from "../../services/common/bounded-list.js";
import { DEFAULT_LINES_PER_INTERVAL } from "../../services/runtime/rate-limited-log.js";
import { createDirSource } from "../../services/sources/dir-source.js";
import { MAX_SOURCE_PROBLEMS, TRUNCATED_WHERE } from "../../services/sources/source-problems.js";
import { captureLogger } from "../support/capture-logger.js";

const cleanups: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A manifest of `count` Services, one document each. */
function services(count: number): string {
  const documents: string[] = [];
  for (let i = 0; i < count; i++) {
    documents.push(
      `apiVersion: v1\nkind: Service\nmetadata:\n  namespace: ns\n  name: svc-${i}\nspec:\n  ports:\n  - port: 80\n`,
    );
  }
  return documents.join("---\n");
}

describe("dir source bounds", () => {
  it("keeps problems and log lines bounded for duplicated manifests and many broken files", async () => {
    const root = await mkdtemp(join(tmpdir(), "dir-source-bounds-"));
    cleanups.push(() => rm(root, { recursive: true, force: true }));
    const copies = 5_000;
    const manifest = services(copies);
    for (const name of ["a", "b", "c", "d"]) await writeFile(join(root, `${name}.yaml`), manifest);
    const broken = 150;
    for (let i = 0; i < broken; i++) {
      await writeFile(join(root, `broken-${String(i).padStart(3, "0")}.yaml`), "kind: [\n");
    }
    const captured = captureLogger();
    const source = createDirSource({ path: root, logger: captured.logger, watch: false });
    cleanups.push(() => source.stop());
    source.start();
    await source.whenSynced();

    expect(source.snapshot()).toHaveLength(copies);
    const problems = source.problems();
    expect(problems).toHaveLength(MAX_SOURCE_PROBLEMS + 1);
    // 150 broken files and 3 duplicated ones, each one problem.
    const last = problems[MAX_SOURCE_PROBLEMS];
    expect(last?.where).toBe(TRUNCATED_WHERE);
    expect(omittedCount(last?.message ?? "")).toBe(broken + 3 - MAX_SOURCE_PROBLEMS);
    expect(new Set(problems.map((p) => `${p.where}\n${p.message}`)).size).toBe(problems.length);

    const problemLines = captured.lines.filter((line) =>
      String(line.msg).startsWith("manifest problem"),
    );
    expect(problemLines).toHaveLength(DEFAULT_LINES_PER_INTERVAL);
    await source.stop();
    const summaries = captured.lines.filter((line) => line.kind === "manifest-problem");
    expect(summaries).toHaveLength(1);
    expect(summaries[0]?.suppressed).toBe(MAX_SOURCE_PROBLEMS + 1 - DEFAULT_LINES_PER_INTERVAL);
  });
});
