import { describe, expect, it } from "vitest";
import {
  judgeWatchFailure,
  RESUME_RETRY_MS,
  RESUME_WINDOW_MS,
  type WatchFailure,
  type WatchFailureVerdict,
} from "../../services/registrar/store/watch-resume-rule.js";

const failure = (over: Partial<WatchFailure>): WatchFailure => ({
  compacted: false,
  endpointCount: 3,
  failingForMs: 0,
  ...over,
});

describe("watch resume rule", () => {
  it.each<[string, Partial<WatchFailure>, WatchFailureVerdict]>([
    ["a silent member: resume at once (it is set aside)", {}, { resumeAfterMs: 0 }],
    [
      "the resume failed too: wait a little",
      { failingForMs: 5 },
      { resumeAfterMs: RESUME_RETRY_MS },
    ],
    [
      "failing just under the window",
      { failingForMs: RESUME_WINDOW_MS - 1 },
      { resumeAfterMs: RESUME_RETRY_MS },
    ],
    [
      "failing for the whole window: the store is unavailable",
      { failingForMs: RESUME_WINDOW_MS },
      "end",
    ],
    ["a compaction always ends it (the reader lists again)", { compacted: true }, "end"],
    ["one endpoint: nowhere else to go", { endpointCount: 1 }, "end"],
    ["two endpoints, first failure", { endpointCount: 2 }, { resumeAfterMs: 0 }],
  ])("%s", (_, over, expected) => {
    expect(judgeWatchFailure(failure(over))).toEqual(expected);
  });
});
