import { describe, expect, it } from "vitest";
import {
  judgeWatchFailure,
  type WatchFailure,
} from "../../services/registrar/store/watch-resume-rule.js";

describe("watch resume rule", () => {
  it.each<[string, WatchFailure, "resume" | "end"]>([
    [
      "a silent member, three endpoints",
      { compacted: false, endpointCount: 3, failuresInRow: 0 },
      "resume",
    ],
    [
      "the third failure in a row, three endpoints",
      { compacted: false, endpointCount: 3, failuresInRow: 2 },
      "resume",
    ],
    [
      "every member failed in a row, then one more",
      { compacted: false, endpointCount: 3, failuresInRow: 3 },
      "end",
    ],
    [
      "a compaction always ends it (the reader lists again)",
      { compacted: true, endpointCount: 3, failuresInRow: 0 },
      "end",
    ],
    [
      "one endpoint: nowhere else to go",
      { compacted: false, endpointCount: 1, failuresInRow: 0 },
      "end",
    ],
    [
      "two endpoints, first failure",
      { compacted: false, endpointCount: 2, failuresInRow: 0 },
      "resume",
    ],
    [
      "two endpoints, both failed in a row",
      { compacted: false, endpointCount: 2, failuresInRow: 2 },
      "end",
    ],
  ])("%s: %s", (_, failure, expected) => {
    expect(judgeWatchFailure(failure)).toBe(expected);
  });
});
