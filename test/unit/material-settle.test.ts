/**
 * When a change of the TLS files is read and decided (pure, no files or
 * timers): scripts of stats and reads, as the shell feeds them during an
 * in-place rotation (certificate, then key, then bundle), an atomic swap, a
 * pair that really mismatches and a write under a read, and what each step
 * says to do.
 */
import { describe, expect, it } from "vitest";
import {
  observeRead,
  observeStat,
  type SettlePolicy,
  type SettleState,
  settledState,
} from "../../services/runtime/tls/material-settle.js";

const POLICY: SettlePolicy = { settleMs: 250, retries: 2 };

/** A stat at `at` seeing signature `sig`, or a read at `at` whose after-stat saw `sig`. */
type Observation = ["stat", number, string] | ["read", number, string, "ok" | "inconsistent"];

/** Each action as text: `none`, `wait <until>`, `read`, `decide`. */
function run(script: readonly Observation[], start: SettleState = settledState("A", 0)): string[] {
  let state = start;
  return script.map((observation) => {
    const step =
      observation[0] === "stat"
        ? observeStat(state, POLICY, observation[1], observation[2])
        : observeRead(state, POLICY, observation[1], {
            signature: observation[2],
            consistent: observation[3] === "ok",
          });
    state = step.state;
    const { action } = step;
    return action.kind === "wait" ? `wait ${action.until}` : action.kind;
  });
}

describe("settling the TLS files", () => {
  const cases: { name: string; script: Observation[]; actions: string[] }[] = [
    {
      name: "an unchanged re-stat does nothing",
      script: [["stat", 5_000, "A"]],
      actions: ["none"],
    },
    {
      name: "an atomic swap is read once quiet, and decided",
      script: [
        ["stat", 1_000, "B"],
        ["stat", 1_250, "B"],
        ["read", 1_252, "B", "ok"],
      ],
      actions: ["wait 1250", "read", "decide"],
    },
    {
      name: "spiffe-helper's in-place writes: each restarts the quiet time; the set is read once",
      script: [
        ["stat", 1_000, "cert"],
        ["stat", 1_050, "cert+key"],
        ["stat", 1_060, "cert+key+bundle"],
        ["stat", 1_250, "cert+key+bundle"], // the first timer, armed before the key was written
        ["stat", 1_310, "cert+key+bundle"],
        ["read", 1_312, "cert+key+bundle", "ok"],
      ],
      actions: ["wait 1250", "wait 1300", "wait 1310", "wait 1310", "read", "decide"],
    },
    {
      name: "a read that raced the key is read again after a settle, not refused",
      script: [
        ["stat", 1_000, "cert"],
        ["stat", 1_250, "cert"],
        ["read", 1_251, "cert", "inconsistent"],
        ["stat", 1_300, "cert+key"], // the key lands
        ["stat", 1_550, "cert+key"],
        ["read", 1_551, "cert+key", "ok"],
      ],
      actions: ["wait 1250", "read", "wait 1501", "wait 1550", "read", "decide"],
    },
    {
      name: "a pair that really mismatches is decided (refused) after the retries",
      script: [
        ["stat", 1_000, "B"],
        ["stat", 1_250, "B"],
        ["read", 1_250, "B", "inconsistent"],
        ["stat", 1_400, "B"], // a watch event of no change: not quiet long enough yet
        ["stat", 1_500, "B"],
        ["read", 1_500, "B", "inconsistent"],
        ["stat", 1_750, "B"],
        ["read", 1_750, "B", "inconsistent"],
        ["stat", 9_000, "B"], // decided: the next re-stat has nothing to do
      ],
      actions: ["wait 1250", "read", "wait 1500", "wait 1500", "read", "wait 1750", "read"].concat([
        "decide",
        "none",
      ]),
    },
    {
      name: "a read the files changed under is discarded and read again once quiet",
      script: [
        ["stat", 1_000, "B"],
        ["stat", 1_250, "B"],
        ["read", 1_260, "C", "ok"],
        ["stat", 1_510, "C"],
        ["read", 1_511, "C", "ok"],
      ],
      actions: ["wait 1250", "read", "wait 1510", "read", "decide"],
    },
    {
      name: "retries are counted per change: a new change after a decision starts from none",
      script: [
        ["stat", 1_000, "B"],
        ["stat", 1_250, "B"],
        ["read", 1_250, "B", "inconsistent"],
        ["stat", 1_500, "B"],
        ["read", 1_500, "B", "inconsistent"],
        ["stat", 1_750, "B"],
        ["read", 1_750, "B", "inconsistent"],
        ["stat", 5_000, "C"],
        ["stat", 5_250, "C"],
        ["read", 5_250, "C", "inconsistent"],
      ],
      actions: ["wait 1250", "read", "wait 1500", "read", "wait 1750", "read", "decide"].concat([
        "wait 5250",
        "read",
        "wait 5500",
      ]),
    },
  ];
  for (const { name, script, actions } of cases) {
    it(name, () => {
      expect(run(script)).toEqual(actions);
    });
  }

  it("reads a first read (pending since ever) at once, and settles it like any other", () => {
    const first: SettleState = { signature: "A", pending: true, quietSince: -Infinity, retries: 0 };
    expect(run([["stat", 0, "A"]], first)).toEqual(["read"]);
    expect(
      run(
        [
          ["stat", 0, "A"],
          ["read", 1, "A", "inconsistent"],
          ["stat", 251, "A"],
          ["read", 252, "A", "ok"],
        ],
        first,
      ),
    ).toEqual(["read", "wait 251", "read", "decide"]);
  });
});
