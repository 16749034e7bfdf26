/**
 * The pure decisions of the directory source, without files or timers: which
 * files a rescan reads again, what a file keeps after a read (its last good
 * objects while it is broken), which of two definitions of an object wins,
 * and how long a burst of changes is debounced.
 */
import { describe, expect, it } from "vitest";
import type { KubeObject } from "../../services/common/kube-object.js";
import {
  assembleFiles,
  type FileRead,
  type FileState,
  nextFileState,
  objectIdentity,
  planReads,
} from "../../services/sources/dir-files.js";
import type { ParsedObject } from "../../services/sources/dir-parse.js";
import { isInside } from "../../services/sources/dir-scan.js";
import { debounceDelay } from "../../services/sources/dir-schedule.js";

const signatures = (entries: Record<string, string>) =>
  new Map(Object.entries(entries).map(([path, signature]) => [path, { signature }]));

const route = (name: string, namespace = "a", apiVersion = "gateway.networking.k8s.io/v1") =>
  ({ apiVersion, kind: "HTTPRoute", metadata: { name, namespace } }) as KubeObject;

const parsed = (...objects: KubeObject[]): ParsedObject[] =>
  objects.map((object, i) => ({ object, line: 1 + i * 5 }));

/** A file state as a clean read of `objects` gives it. */
const good = (signature: string, ...objects: KubeObject[]): FileState =>
  nextFileState("x.yaml", undefined, signature, {
    kind: "parsed",
    objects: parsed(...objects),
  }) as FileState;

describe("planReads", () => {
  const cases: {
    name: string;
    known: Record<string, string>;
    found: Record<string, string>;
    reread: string[];
    removed: string[];
  }[] = [
    {
      name: "nothing known",
      known: {},
      found: { a: "1", b: "2" },
      reread: ["a", "b"],
      removed: [],
    },
    { name: "nothing changed", known: { a: "1" }, found: { a: "1" }, reread: [], removed: [] },
    {
      name: "a signature changed",
      known: { a: "1", b: "2" },
      found: { a: "1", b: "3" },
      reread: ["b"],
      removed: [],
    },
    {
      name: "a file removed",
      known: { a: "1", b: "2" },
      found: { b: "2" },
      reread: [],
      removed: ["a"],
    },
    {
      name: "everything removed",
      known: { a: "1", b: "2" },
      found: {},
      reread: [],
      removed: ["a", "b"],
    },
    {
      name: "one replaced by another",
      known: { a: "1" },
      found: { c: "1" },
      reread: ["c"],
      removed: ["a"],
    },
  ];
  for (const { name, known, found, reread, removed } of cases) {
    it(name, () => {
      expect(planReads(signatures(known), signatures(found))).toEqual({ reread, removed });
    });
  }
});

describe("nextFileState", () => {
  const before = good("s1", route("r1"), route("r2"));
  const problem = { where: "x.yaml:3", message: "bad indentation" };
  const cases: {
    name: string;
    previous: FileState | undefined;
    read: FileRead;
    expected: Omit<FileState, "identities"> | undefined;
  }[] = [
    {
      name: "a clean read replaces the objects and clears the problems",
      previous: { ...before, problems: [problem] },
      read: { kind: "parsed", objects: parsed(route("r3")) },
      expected: { signature: "s2", objects: parsed(route("r3")), problems: [] },
    },
    {
      name: "an unusable file keeps its last good objects",
      previous: before,
      read: { kind: "unusable", problems: [problem] },
      expected: { signature: "s2", objects: before.objects, problems: [problem] },
    },
    {
      name: "an unusable new file has no objects",
      previous: undefined,
      read: { kind: "unusable", problems: [problem] },
      expected: { signature: "s2", objects: [], problems: [problem] },
    },
    {
      name: "a known file that vanished is dropped",
      previous: before,
      read: { kind: "unreadable", code: "ENOENT", message: "ENOENT: gone" },
      expected: undefined,
    },
    {
      name: "a new file that vanished is kept, empty, with the failure",
      previous: undefined,
      read: { kind: "unreadable", code: "ENOENT", message: "ENOENT: gone" },
      expected: {
        signature: "s2",
        objects: [],
        problems: [{ where: "x.yaml", message: "cannot read file: ENOENT: gone" }],
      },
    },
    {
      name: "a file that cannot be read keeps its last good objects",
      previous: before,
      read: { kind: "unreadable", code: "EACCES", message: "EACCES: denied" },
      expected: {
        signature: "s2",
        objects: before.objects,
        problems: [{ where: "x.yaml", message: "cannot read file: EACCES: denied" }],
      },
    },
  ];
  for (const { name, previous, read, expected } of cases) {
    it(name, () => {
      const next = nextFileState("x.yaml", previous, "s2", read);
      if (expected === undefined) {
        expect(next).toBeUndefined();
        return;
      }
      expect(next).toEqual({
        ...expected,
        identities: expected.objects.map(({ object }) => objectIdentity(object)),
      });
    });
  }

  it("keeps the very objects of the last good read", () => {
    const next = nextFileState("x.yaml", before, "s2", { kind: "unusable", problems: [problem] });
    expect(next?.objects).toBe(before.objects);
    expect(next?.identities).toBe(before.identities);
  });
});

describe("objectIdentity", () => {
  it("is the API group, kind, namespace and name, whatever the version", () => {
    expect(objectIdentity(route("r", "a", "gateway.networking.k8s.io/v1"))).toBe(
      objectIdentity(route("r", "a", "gateway.networking.k8s.io/v1beta1")),
    );
    expect(objectIdentity(route("r", "a"))).not.toBe(objectIdentity(route("r", "b")));
  });
});

describe("assembleFiles", () => {
  const scanProblem = { where: "sub/", message: "cannot read directory: EACCES" };
  const cases: {
    name: string;
    files: Record<string, FileState>;
    leading: { where: string; message: string }[];
    objects: string[];
    problems: { where: string; message: string }[];
  }[] = [
    {
      name: "objects by file in the order given, then document",
      files: { "a.yaml": good("1", route("r1"), route("r2")), "b.yaml": good("2", route("r3")) },
      leading: [],
      objects: ["r1", "r2", "r3"],
      problems: [],
    },
    {
      name: "the first definition wins, the other is a problem",
      files: { "a.yaml": good("1", route("r1")), "b.yaml": good("2", route("r2"), route("r1")) },
      leading: [],
      objects: ["r1", "r2"],
      problems: [
        {
          where: "b.yaml:6",
          message: "HTTPRoute a/r1 is also defined at a.yaml:1; this copy is ignored",
        },
      ],
    },
    {
      name: "the scan's problems first, then each file's",
      files: {
        "a.yaml": { ...good("1", route("r1")), problems: [{ where: "a.yaml:2", message: "bad" }] },
      },
      leading: [scanProblem],
      objects: ["r1"],
      problems: [scanProblem, { where: "a.yaml:2", message: "bad" }],
    },
  ];
  for (const { name, files, leading, objects, problems } of cases) {
    it(name, () => {
      const map = new Map(Object.entries(files));
      const assembled = assembleFiles(map, [...map.keys()], leading);
      expect(assembled.objects.map((o) => o.metadata?.name)).toEqual(objects);
      expect(assembled.problems).toEqual(problems);
    });
  }

  it("visits the files in the order of `paths`", () => {
    const map = new Map([
      ["a.yaml", good("1", route("r1"))],
      ["b.yaml", good("2", route("r1", "a"), route("r2"))],
    ]);
    const assembled = assembleFiles(map, ["b.yaml", "a.yaml"], []);
    expect(assembled.objects.map((o) => o.metadata?.name)).toEqual(["r1", "r2"]);
    expect(assembled.problems.map((p) => p.where)).toEqual(["a.yaml:1"]);
  });
});

describe("debounceDelay", () => {
  const cases: { now: number; first: number; debounceMs: number; delay: number }[] = [
    { now: 0, first: 0, debounceMs: 100, delay: 100 }, // the first change of a burst
    { now: 500, first: 0, debounceMs: 100, delay: 100 }, // quiet time still fits
    { now: 950, first: 0, debounceMs: 100, delay: 50 }, // capped at ten times the debounce
    { now: 1_000, first: 0, debounceMs: 100, delay: 0 },
    { now: 1_200, first: 0, debounceMs: 100, delay: 0 }, // never negative
    { now: 10, first: 10, debounceMs: 0, delay: 0 },
  ];
  for (const { now, first, debounceMs, delay } of cases) {
    it(`waits ${delay} ms at ${now} for a burst begun at ${first} (debounce ${debounceMs})`, () => {
      expect(debounceDelay(now, first, debounceMs)).toBe(delay);
    });
  }
});

describe("isInside", () => {
  it.each([
    ["/r", "/r", true],
    ["/r", "/r/a.yaml", true],
    ["/r", "/r/..data/a.yaml", true],
    ["/r", "/r/..2026_01_01/a.yaml", true],
    ["/r", "/", false],
    ["/r", "/rx/a.yaml", false],
    ["/r", "/etc/passwd", false],
    ["/r/sub", "/r/a.yaml", false],
  ])("%s contains %s: %s", (root, target, inside) => {
    expect(isInside(root, target)).toBe(inside);
  });
});
