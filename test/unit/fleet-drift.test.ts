/** Class-2 drift: the baseline digest (most common; ties to empty, else the smallest). */
import { describe, expect, it } from "vitest";
import { driftedClusters } from "../../services/common/fleet-drift.js";

const d = (spec: string) =>
  spec.split(" ").map((pair) => {
    const [cluster, digest] = pair.split("=") as [string, string];
    return { cluster, digest };
  });

describe("driftedClusters", () => {
  it.each([
    { name: "one cluster never drifts", digests: "west=aa", want: [] },
    { name: "all equal", digests: "east=aa hub=aa west=aa", want: [] },
    { name: "the odd one out", digests: "east=aa hub=aa west=bb", want: ["west"] },
    {
      name: "a local override where others have none",
      digests: "east= hub= west=bb",
      want: ["west"],
    },
    { name: "a tie with the empty digest: empty wins", digests: "east=aa west=", want: ["east"] },
    { name: "a tie without empty: the smallest wins", digests: "east=bb west=aa", want: ["east"] },
    { name: "most common wins over empty", digests: "a=cc b=cc c= d=dd", want: ["c", "d"] },
  ])("$name", ({ digests, want }) => {
    expect(driftedClusters(d(digests))).toEqual(want);
  });
});
