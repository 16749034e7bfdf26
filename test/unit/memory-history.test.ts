/**
 * The two halves of the memory backend's history on their own: the change
 * log (what a watch replays, and what compaction drops) and the key
 * versions (what a read at an old revision sees, and what pruning keeps).
 */
import { describe, expect, it } from "vitest";
import type { RawChange } from "../../services/registrar/store/decode-entry.js";
import { createChangeLog } from "../../services/registrar/store/memory-change-log.js";
import { createKeyHistory } from "../../services/registrar/store/memory-key-history.js";

const put = (key: string, revision: number): RawChange => ({
  type: "put",
  key,
  value: Uint8Array.of(revision),
  revision,
});
const del = (key: string, revision: number): RawChange => ({ type: "delete", key, revision });

describe("change log", () => {
  // Revision 3 is one batch of two changes.
  const changes = [put("a", 2), put("b", 3), del("a", 3), put("c", 4)];
  const cases: [string, number, number, string[], RawChange[]][] = [
    ["drops nothing below the first revision", 2, 1, [], changes],
    ["drops one revision", 3, 1, ["a"], changes.slice(1)],
    ["drops a whole batch", 4, 3, ["a", "b"], changes.slice(3)],
    ["drops everything", 5, 4, ["a", "b", "c"], []],
  ];
  for (const [name, oldest, after, dropped, retained] of cases) {
    it(name, () => {
      const log = createChangeLog();
      for (const change of changes) log.append(change);
      expect([...log.dropBefore(oldest)].sort()).toEqual(dropped);
      expect(log.changesAfter(after)).toEqual(retained);
    });
  }

  it("keeps serving the retained changes after slicing off a long dropped head", () => {
    const log = createChangeLog();
    for (let revision = 2; revision <= 3_001; revision++) log.append(put("k", revision));
    expect(log.dropBefore(2_000).size).toBe(1);
    expect(log.changesAfter(0).map((change) => change.revision)).toEqual(
      Array.from({ length: 1_002 }, (_, i) => 2_000 + i),
    );
    expect(log.changesAfter(3_000)).toEqual([put("k", 3_001)]);
  });
});

describe("key history", () => {
  /** a: put at 2, put at 3, deleted at 4, put again at 6; b: put at 5. */
  const history = () => {
    const h = createKeyHistory();
    h.record("a", 2, Uint8Array.of(2));
    h.record("a", 3, Uint8Array.of(3));
    h.record("a", 4, undefined);
    h.record("b", 5, Uint8Array.of(5));
    h.record("a", 6, Uint8Array.of(6));
    return h;
  };
  const live = (h: ReturnType<typeof history>, at: number) =>
    [...h.entriesAt(at, "", "", false)].map(({ key, modRevision }) => `${key}@${modRevision}`);

  const reads: [number, string[]][] = [
    [1, []],
    [2, ["a@2"]],
    [3, ["a@3"]],
    [4, []],
    [5, ["b@5"]],
    [6, ["a@6", "b@5"]],
  ];
  for (const [at, expected] of reads) {
    it(`reads ${expected.join(", ") || "nothing"} at revision ${at}`, () => {
      expect(live(history(), at)).toEqual(expected);
    });
  }

  it("counts the creation from the first put after a delete", () => {
    const h = history();
    expect([h.createRevisionOf("a"), h.createRevisionOf("b"), h.createRevisionOf("c")]).toEqual([
      6,
      5,
      undefined,
    ]);
    h.record("b", 7, undefined);
    expect([h.exists("a"), h.exists("b"), h.createRevisionOf("b")]).toEqual([
      true,
      false,
      undefined,
    ]);
  });

  const prunes: [number, number, string[]][] = [
    // Pruning keeps the version visible at the oldest revision, and everything after it.
    [3, 3, ["a@3"]],
    // A tombstone visible at the oldest revision goes: nothing is left to read there.
    [4, 6, ["a@6", "b@5"]],
  ];
  for (const [oldest, at, expected] of prunes) {
    it(`reads the same at ${at} after pruning to ${oldest}`, () => {
      const h = history();
      h.prune("a", oldest);
      expect(live(h, at)).toEqual(expected);
    });
  }

  it("forgets a key whose last version is a pruned tombstone", () => {
    const h = createKeyHistory();
    h.record("a", 2, Uint8Array.of(2));
    h.record("a", 3, undefined);
    h.record("b", 4, Uint8Array.of(4));
    h.prune("a", 3);
    expect(live(h, 4)).toEqual(["b@4"]);
    h.record("a", 5, Uint8Array.of(5));
    expect([live(h, 5), h.createRevisionOf("a")]).toEqual([["a@5", "b@4"], 5]);
  });
});
