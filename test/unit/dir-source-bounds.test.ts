/**
 * The bounds on a directory source's problems, without files: a duplicated
 * manifest is one problem per file however many objects it repeats, and a
 * problem list is deduplicated and capped with a final entry counting the
 * rest. Also the bounded-list helpers those rest on.
 */
import { describe, expect, it } from "vitest";
import {
  boundList,
  capText,
  dedupeBy,
  groupDigits,
  omittedCount,
  truncationNote,
} from "../../services/common/bounded-list.js";
import type { KubeObject } from "../../services/common/kube-object.js";
import { assembleFiles, type FileState, nextFileState } from "../../services/sources/dir-files.js";
import { parseCleanManifest, parseManifest } from "../../services/sources/dir-parse.js";
import {
  boundProblems,
  MAX_SOURCE_PROBLEMS,
  TRUNCATED_WHERE,
} from "../../services/sources/source-problems.js";

const route = (name: string) =>
  ({
    apiVersion: "gateway.networking.k8s.io/v1",
    kind: "HTTPRoute",
    metadata: { name, namespace: "a" },
  }) as KubeObject;

/** A file state holding `count` routes r0… (line 1 + 5 i each). */
const routes = (signature: string, count: number): FileState =>
  nextFileState("x.yaml", undefined, signature, {
    kind: "parsed",
    objects: Array.from({ length: count }, (_, i) => ({ object: route(`r${i}`), line: 1 + 5 * i })),
  }) as FileState;

describe("assembleFiles with duplicated manifests", () => {
  it("reports one problem per file that repeats objects, with a count", () => {
    const copies = 50_000;
    const files = new Map([
      ["a.yaml", routes("1", copies)],
      ["b.yaml", routes("2", copies)],
      ["c.yaml", routes("3", copies)],
      ["d.yaml", routes("4", 1)],
    ]);
    const assembled = assembleFiles(files, [...files.keys()], []);
    expect(assembled.objects).toHaveLength(copies);
    expect(assembled.problems).toEqual([
      {
        where: "b.yaml:1",
        message:
          "HTTPRoute a/r0 and 49,999 more objects of this file are also defined earlier (the first at a.yaml:1); these 50,000 copies are ignored",
      },
      {
        where: "c.yaml:1",
        message:
          "HTTPRoute a/r0 and 49,999 more objects of this file are also defined earlier (the first at a.yaml:1); these 50,000 copies are ignored",
      },
      {
        where: "d.yaml:1",
        message: "HTTPRoute a/r0 is also defined at a.yaml:1; this copy is ignored",
      },
    ]);
  });
});

describe("boundProblems", () => {
  it("keeps a short list as it is", () => {
    const problems = [
      { where: "a.yaml:1", message: "bad" },
      { where: "b.yaml:2", message: "worse" },
    ];
    expect(boundProblems(problems)).toEqual(problems);
    expect(boundProblems([])).toEqual([]);
  });

  it("lists a repeated problem once", () => {
    const problem = { where: "a.yaml:1", message: "bad" };
    expect(boundProblems([problem, { ...problem }, problem])).toEqual([problem]);
  });

  it("keeps the first problems and counts the rest in a final entry", () => {
    const problems = Array.from({ length: 384_953 }, (_, i) => ({
      where: `f${i}.yaml:1`,
      message: "YAML error",
    }));
    const bounded = boundProblems(problems);
    expect(bounded).toHaveLength(MAX_SOURCE_PROBLEMS + 1);
    expect(bounded.slice(0, MAX_SOURCE_PROBLEMS)).toEqual(problems.slice(0, MAX_SOURCE_PROBLEMS));
    expect(bounded[MAX_SOURCE_PROBLEMS]).toEqual({
      where: TRUNCATED_WHERE,
      message: "384,853 more problems not shown (384,953 in all)",
    });
    expect(omittedCount(bounded[MAX_SOURCE_PROBLEMS]?.message ?? "")).toBe(384_853);
  });

  it("caps the text of each problem", () => {
    const [problem] = boundProblems([{ where: "a.yaml:1", message: "x".repeat(100_000) }]);
    expect(problem?.message.length).toBeLessThanOrEqual(1_024);
    expect(problem?.message).toMatch(/… \(\d{2},\d{3} more characters\)$/);
  });
});

describe("bounded-list helpers", () => {
  it("boundList keeps the first entries and counts the rest", () => {
    expect(boundList([1, 2, 3], 5)).toEqual({ items: [1, 2, 3], omitted: 0 });
    expect(boundList([1, 2, 3], 2)).toEqual({ items: [1, 2], omitted: 1 });
  });

  it("dedupeBy keeps the first of each key, for any length", () => {
    const many = Array.from({ length: 300_000 }, (_, i) => i % 7);
    expect(dedupeBy(many, String)).toEqual([0, 1, 2, 3, 4, 5, 6]);
  });

  it("groupDigits, truncationNote and omittedCount agree", () => {
    expect(groupDigits(0)).toBe("0");
    expect(groupDigits(999)).toBe("999");
    expect(groupDigits(1_000)).toBe("1,000");
    expect(groupDigits(1_234_567)).toBe("1,234,567");
    for (const n of [1, 999, 1_000, 384_853, 12_345_678]) {
      expect(omittedCount(truncationNote(n, n + 100, "rejections"))).toBe(n);
    }
    expect(omittedCount("3 more things went wrong")).toBeUndefined();
    expect(omittedCount("bad")).toBeUndefined();
  });

  it("capText leaves short text alone and never exceeds the limit", () => {
    expect(capText("short", 10)).toBe("short");
    for (const length of [11, 99, 1_000, 123_456]) {
      expect(capText("y".repeat(length), 60).length).toBeLessThanOrEqual(60);
    }
  });
});

describe("parsing a manifest with a very long list", () => {
  it("does not overflow the call stack", () => {
    const items = Array.from({ length: 200_000 }, (_, i) => `- ${i}`).join("\n    ");
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: big\ndata:\n  list:\n    ${items}\n`;
    expect(parseCleanManifest(text)?.objects).toHaveLength(1);
    expect(parseManifest(text, "big.yaml").problems).toEqual([]);
  });
});
