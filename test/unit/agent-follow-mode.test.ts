/**
 * The follow mode, table-driven: every state against every event (the next
 * state and the effects), the mode each state shows, and an outage walked
 * through event by event. No timers, no client.
 */
import { describe, expect, it } from "vitest";
import type { FollowMode } from "../../clients/agent/agent-metrics.js";
import {
  type FollowEvent,
  type FollowState,
  INITIAL_FOLLOW_STATE,
  observedMode,
  transition,
} from "../../clients/agent/follower/follow-mode.js";

const states = {
  idle: { kind: "idle" },
  poll: { kind: "poll" },
  watch: { kind: "watch" },
  waiting: { kind: "backoff", waiting: true },
  retrying: { kind: "backoff", waiting: false },
} satisfies Record<string, FollowState>;
type StateName = keyof typeof states;

const events = {
  "cycle, empty set, watch": { type: "cycle", services: 0, configured: "watch" },
  "cycle, empty set, poll": { type: "cycle", services: 0, configured: "poll" },
  "cycle, watch": { type: "cycle", services: 3, configured: "watch" },
  "cycle, poll": { type: "cycle", services: 3, configured: "poll" },
  "stream-synced": { type: "stream-synced" },
  "stream-down": { type: "stream-down" },
  retry: { type: "retry" },
  "poll-succeeded": { type: "poll-succeeded" },
  "services-changed": { type: "services-changed" },
  resync: { type: "resync" },
} satisfies Record<string, FollowEvent>;
type EventName = keyof typeof events;

const nameOf = (state: FollowState): StateName =>
  (Object.keys(states) as StateName[]).find(
    (name) => JSON.stringify(states[name]) === JSON.stringify(state),
  ) as StateName;

/** Every state × event: the next state and the effects' types. */
const table: Record<StateName, Record<EventName, [StateName, ...string[]]>> = {
  idle: {
    "cycle, empty set, watch": ["idle"],
    "cycle, empty set, poll": ["idle"],
    "cycle, watch": ["watch"],
    "cycle, poll": ["poll"],
    "stream-synced": ["idle"],
    "stream-down": ["idle"],
    retry: ["idle"],
    "poll-succeeded": ["idle"],
    "services-changed": ["idle", "restart-cycle"],
    resync: ["idle", "restart-cycle"],
  },
  poll: {
    "cycle, empty set, watch": ["idle"],
    "cycle, empty set, poll": ["idle"],
    "cycle, watch": ["watch"],
    "cycle, poll": ["poll"],
    "stream-synced": ["poll"],
    "stream-down": ["poll"],
    retry: ["poll"],
    "poll-succeeded": ["poll"],
    "services-changed": ["poll", "restart-cycle"],
    resync: ["poll", "restart-cycle"],
  },
  watch: {
    "cycle, empty set, watch": ["idle"],
    "cycle, empty set, poll": ["idle"],
    "cycle, watch": ["watch"],
    "cycle, poll": ["poll"],
    "stream-synced": ["watch", "reset-backoff"],
    "stream-down": ["waiting", "start-poller"],
    retry: ["watch"],
    "poll-succeeded": ["watch"],
    "services-changed": ["watch", "restart-cycle"],
    resync: ["watch", "restart-cycle"],
  },
  waiting: {
    "cycle, empty set, watch": ["idle"],
    "cycle, empty set, poll": ["idle"],
    "cycle, watch": ["watch"],
    "cycle, poll": ["poll"],
    "stream-synced": ["watch", "reset-backoff", "stop-poller"],
    "stream-down": ["waiting"],
    retry: ["retrying"],
    "poll-succeeded": ["waiting", "wake-reconnect"],
    "services-changed": ["waiting", "restart-cycle"],
    resync: ["waiting", "restart-cycle"],
  },
  retrying: {
    "cycle, empty set, watch": ["idle"],
    "cycle, empty set, poll": ["idle"],
    "cycle, watch": ["watch"],
    "cycle, poll": ["poll"],
    "stream-synced": ["watch", "reset-backoff", "stop-poller"],
    "stream-down": ["waiting"],
    retry: ["retrying"],
    "poll-succeeded": ["retrying"],
    "services-changed": ["retrying", "restart-cycle"],
    resync: ["retrying", "restart-cycle"],
  },
};

describe("follow mode: transitions", () => {
  for (const from of Object.keys(table) as StateName[]) {
    for (const on of Object.keys(table[from]) as EventName[]) {
      const [to, ...effects] = table[from][on];
      it(`${from} + ${on} -> ${to}${effects.length > 0 ? ` (${effects.join(", ")})` : ""}`, () => {
        const next = transition(states[from], events[on]);
        expect(nameOf(next.state)).toBe(to);
        expect(next.effects.map((effect) => effect.type)).toEqual(effects);
      });
    }
  }

  it("starts idle", () => {
    expect(nameOf(INITIAL_FOLLOW_STATE)).toBe("idle");
  });
});

describe("follow mode: the mode it shows", () => {
  const shown: [StateName, FollowMode, FollowMode][] = [
    ["idle", "watch", "watch"],
    ["idle", "poll", "poll"],
    ["poll", "poll", "poll"],
    ["watch", "watch", "watch"],
    ["waiting", "watch", "poll"],
    ["retrying", "watch", "poll"],
  ];
  for (const [state, configured, expected] of shown) {
    it(`${state}, configured ${configured}: ${expected}`, () => {
      expect(observedMode(states[state], configured)).toBe(expected);
    });
  }
});

describe("follow mode: an outage, event by event", () => {
  it("streams, falls back to polling, retries, wakes on a good poll, and returns to the stream", () => {
    const walk: [EventName, StateName, FollowMode, string[]][] = [
      ["cycle, watch", "watch", "watch", []],
      ["stream-synced", "watch", "watch", ["reset-backoff"]],
      ["stream-down", "waiting", "poll", ["start-poller"]],
      ["retry", "retrying", "poll", []],
      ["stream-down", "waiting", "poll", []],
      ["poll-succeeded", "waiting", "poll", ["wake-reconnect"]],
      ["retry", "retrying", "poll", []],
      ["poll-succeeded", "retrying", "poll", []],
      ["stream-synced", "watch", "watch", ["reset-backoff", "stop-poller"]],
      ["services-changed", "watch", "watch", ["restart-cycle"]],
      ["cycle, empty set, watch", "idle", "watch", []],
    ];
    let state: FollowState = INITIAL_FOLLOW_STATE;
    for (const [on, to, mode, effects] of walk) {
      const next = transition(state, events[on]);
      state = next.state;
      expect([
        on,
        nameOf(state),
        observedMode(state, "watch"),
        next.effects.map((e) => e.type),
      ]).toEqual([on, to, mode, effects]);
    }
  });
});
