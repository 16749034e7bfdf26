/** The dependency file's format: services, separators, comments, and ignored bad entries. */
import { mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  createDependencyFile,
  type DependencyFile,
  parseDependencyList,
} from "../../clients/agent/dependency-file.js";
import { waitFor } from "../support/wait.js";

describe("dependency list", () => {
  const cases: [string, string, string[], [number, RegExp][]][] = [
    ["one per line", "shop/a\nshop/b\n", ["shop/a", "shop/b"], []],
    [
      "commas, spaces and CRLF",
      "shop/b, shop/a\r\npay/ledger  shop/a",
      ["pay/ledger", "shop/a", "shop/b"],
      [],
    ],
    [
      "comments and blank lines",
      "# callers of shop\n\nshop/a # the cart\n  # done\n",
      ["shop/a"],
      [],
    ],
    [
      "bad entries are reported with their line and ignored",
      "shop/a\nShop/b\nshop\nshop/c/d, shop/e",
      ["shop/a", "shop/e"],
      [
        [2, /namespace "Shop" is not a DNS-1123 label/],
        [3, /"shop" must be "namespace\/name"/],
        [4, /"shop\/c\/d" must be "namespace\/name"/],
      ],
    ],
    ["an empty file", "", [], []],
  ];
  for (const [name, text, services, problems] of cases) {
    it(name, () => {
      const list = parseDependencyList(text);
      expect(list.services).toEqual(services);
      expect(list.problems).toHaveLength(problems.length);
      for (const [i, [line, message]] of problems.entries()) {
        expect(list.problems[i]?.line).toBe(line);
        expect(list.problems[i]?.message).toMatch(message);
      }
    });
  }
});

describe("dependency file", () => {
  let dir: string | undefined;
  let file: DependencyFile | undefined;
  afterEach(async () => {
    file?.stop();
    if (dir !== undefined) await rm(dir, { recursive: true, force: true });
    dir = file = undefined;
  });

  it("follows the file through edits and atomic replacements, keeping the last set while it is missing", async () => {
    dir = await mkdtemp(join(tmpdir(), "agent-deps-"));
    const path = join(dir, "deps");
    await writeFile(path, "shop/a\n");
    file = createDependencyFile({ path, debounceMs: 10 });
    let changes = 0;
    file.onChange(() => changes++);
    await file.start();
    expect(file.services).toEqual(["shop/a"]);

    await writeFile(path, "shop/a\nshop/b\nBAD\n");
    await waitFor(() => file?.services.length === 2, 5_000, "the edit");
    expect(file.problems.map((p) => p.line)).toEqual([3]);

    await writeFile(join(dir, "deps.new"), "shop/c\n");
    await rename(join(dir, "deps.new"), path);
    await waitFor(() => file?.services.join() === "shop/c", 5_000, "the replacement");

    await rm(path);
    await waitFor(() => file?.problems[0]?.line === 0, 5_000, "the missing file reported");
    expect(file.services).toEqual(["shop/c"]);
    expect(changes).toBeGreaterThanOrEqual(3);
  });
});
