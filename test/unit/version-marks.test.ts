/**
 * Rollback refusal's high-water marks, table-driven: which candidates a mark
 * refuses, how marks move, and how they are listed and restored.
 */
import { describe, expect, it } from "vitest";
import { createVersionMarks, type VersionMark } from "../../services/common/version-marks.js";
import { versionAt } from "../support/projections.js";

const candidate = (origin: string, service: string, version: string) => ({
  origin,
  service,
  projection: { service, version },
});

describe("version marks: check", () => {
  const cases: {
    name: string;
    accepted: [origin: string, service: string, version: string][];
    check: [origin: string, service: string, version: string];
    refused: boolean;
  }[] = [
    {
      name: "no mark: anything passes",
      accepted: [],
      check: ["hub", "a/b", versionAt(1)],
      refused: false,
    },
    {
      name: "older than the mark: refused",
      accepted: [["hub", "a/b", versionAt(2)]],
      check: ["hub", "a/b", versionAt(1)],
      refused: true,
    },
    {
      name: "equal to the mark: passes",
      accepted: [["hub", "a/b", versionAt(2)]],
      check: ["hub", "a/b", versionAt(2)],
      refused: false,
    },
    {
      name: "newer: passes",
      accepted: [["hub", "a/b", versionAt(2)]],
      check: ["hub", "a/b", versionAt(3)],
      refused: false,
    },
    {
      name: "another origin's mark does not apply",
      accepted: [["hub", "a/b", versionAt(2)]],
      check: ["east", "a/b", versionAt(1)],
      refused: false,
    },
    {
      name: "another service's mark does not apply",
      accepted: [["hub", "a/c", versionAt(2)]],
      check: ["hub", "a/b", versionAt(1)],
      refused: false,
    },
    {
      name: "a mark never goes down",
      accepted: [
        ["hub", "a/b", versionAt(3)],
        ["hub", "a/b", versionAt(1)],
      ],
      check: ["hub", "a/b", versionAt(2)],
      refused: true,
    },
    {
      name: "compared as instants, not text",
      accepted: [["hub", "a/b", "2026-11-01T01:00:00+01:00"]],
      check: ["hub", "a/b", "2026-11-01T00:00:00.5Z"],
      refused: false,
    },
    {
      name: "older with a zone offset: refused",
      accepted: [["hub", "a/b", "2026-11-01T00:00:00Z"]],
      check: ["hub", "a/b", "2026-11-01T00:30:00+01:00"],
      refused: true,
    },
    {
      name: "an unparsable version is left to the policy",
      accepted: [["hub", "a/b", versionAt(2)]],
      check: ["hub", "a/b", "yesterday"],
      refused: false,
    },
    {
      name: "an unparsable accepted version sets no mark",
      accepted: [["hub", "a/b", "yesterday"]],
      check: ["hub", "a/b", versionAt(1)],
      refused: false,
    },
  ];
  for (const c of cases) {
    it(c.name, () => {
      const marks = createVersionMarks();
      for (const [origin, service, version] of c.accepted)
        marks.accept(candidate(origin, service, version));
      const rejection = marks.check(candidate(...c.check));
      expect(rejection?.reason).toBe(c.refused ? "rollback" : undefined);
      if (rejection !== undefined) expect(rejection.message).toContain(c.check[2]);
    });
  }
});

describe("version marks: list and restore", () => {
  it("lists one mark per origin and service, by origin then service, and restores from the list", () => {
    const marks = createVersionMarks();
    marks.accept(candidate("west", "a/b", versionAt(1)));
    marks.accept(candidate("east", "a/c", versionAt(5)));
    marks.accept(candidate("east", "a/b", versionAt(2)));
    marks.accept(candidate("east", "a/b", versionAt(4)));
    const listed: VersionMark[] = [
      { origin: "east", service: "a/b", version: versionAt(4) },
      { origin: "east", service: "a/c", version: versionAt(5) },
      { origin: "west", service: "a/b", version: versionAt(1) },
    ];
    expect(marks.list()).toEqual(listed);
    expect(marks.size).toBe(3);
    const restored = createVersionMarks([
      ...listed,
      { origin: "east", service: "a/b", version: versionAt(3) }, // lower repeat: ignored
      { origin: "north", service: "a/b", version: "garbage" }, // skipped
    ]);
    expect(restored.list()).toEqual(listed);
    expect(restored.check(candidate("east", "a/b", versionAt(3)))?.reason).toBe("rollback");
  });
});
