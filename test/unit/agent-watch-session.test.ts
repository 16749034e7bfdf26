/**
 * The watch-session reducer, table-driven: every phase against every event
 * type, the protocol errors and their messages, the buffer cap, and the
 * resume revision a new stream asks for. No timers, no client.
 */
import { create } from "@bufbuild/protobuf";
import { describe, expect, it } from "vitest";
import type { ReceivedChange } from "../../clients/agent/follower/candidate-set.js";
import {
  bufferedChanges,
  changeOf,
  MAX_BUFFERED_EVENTS,
  openSession,
  resumeRevision,
  type SessionStep,
  step,
  type WatchSession,
} from "../../clients/agent/follower/watch-session.js";
import {
  type WatchConfigResponse,
  WatchConfigResponseSchema,
  WatchEventType,
} from "../../gen/aether/registry/v1/config_service_pb.js";
import { makeProjection, versionAt } from "../support/projections.js";

const event = (
  type: WatchEventType,
  fields: {
    service?: string;
    origin?: string;
    version?: number;
    revision: number;
    resumed?: boolean;
  },
): WatchConfigResponse =>
  create(WatchConfigResponseSchema, {
    type,
    service: fields.service ?? "",
    originCluster: fields.origin ?? "",
    revision: BigInt(fields.revision),
    resumed: fields.resumed ?? false,
    projection:
      fields.service !== undefined && fields.version !== undefined
        ? makeProjection(fields.service, {
            origin: fields.origin ?? "",
            version: versionAt(fields.version),
          })
        : undefined,
  });

const snapshot = (revision: number) =>
  event(WatchEventType.SNAPSHOT, { service: "shop/a", origin: "hub", version: 1, revision });
const upsert = (revision: number) =>
  event(WatchEventType.UPSERT, { service: "shop/a", origin: "hub", version: 2, revision });
const remove = (revision: number) =>
  event(WatchEventType.DELETE, { service: "shop/b", origin: "hub", revision });
const synced = (revision: number, resumed = false) =>
  event(WatchEventType.SYNCED, { revision, resumed });
const keepalive = (revision: number) => event(WatchEventType.KEEPALIVE, { revision });
const unknown = (revision: number) => event(99 as WatchEventType, { revision });

/** `put origin/service@nnn` or `delete origin/service`. */
const describeChange = (change: ReceivedChange) =>
  change.kind === "put"
    ? `put ${change.origin}/${change.service}@${change.projection?.version.slice(-4, -1)}`
    : `delete ${change.origin}/${change.service}`;

const describeSession = (session: WatchSession) =>
  session.phase === "live"
    ? `live @${session.appliedRevision}`
    : `buffering from ${session.resume}: [${bufferedChanges(session).map(describeChange).join(", ")}]`;

/** The next session and the effects, as text. */
const describeStep = ({ session, effects }: SessionStep) => ({
  session: describeSession(session),
  effects: effects.map((effect) => {
    switch (effect.type) {
      case "synced":
        return `synced${effect.resumed ? " resumed" : ""} @${effect.revision}: [${effect.changes.map(describeChange).join(", ")}]`;
      case "change":
        return `change @${effect.revision}: ${describeChange(effect.change)}`;
      case "advance":
        return `advance @${effect.revision}`;
      default:
        return `protocol error: ${effect.message}`;
    }
  }),
});

/** Steps `events` from a new session resuming from `resume`, the resume point staying `resume`. */
const sessionAfter = (resume: number, ...events: WatchConfigResponse[]): WatchSession =>
  events.reduce<WatchSession>(
    (session, e) => step(session, e, BigInt(resume)).session,
    openSession(BigInt(resume)),
  );

const sessions: Record<string, () => WatchSession> = {
  "buffering a snapshot (empty)": () => openSession(0n),
  "buffering a snapshot (one change)": () => sessionAfter(0, snapshot(5)),
  "buffering a resume from 5": () => sessionAfter(5, upsert(6)),
  "live at 8": () => sessionAfter(0, snapshot(8), synced(8)),
};

interface Row {
  readonly session: keyof typeof sessions;
  readonly event: WatchConfigResponse;
  /** The resume point the follower holds; default the session's resume (or 8 when live). */
  readonly resumePoint?: number;
  readonly next: string;
  readonly effects: string[];
}

const rows: Row[] = [
  // Buffering a snapshot: changes are buffered, in order, never applied.
  {
    session: "buffering a snapshot (empty)",
    event: snapshot(5),
    next: "buffering from 0: [put hub/shop/a@001]",
    effects: [],
  },
  {
    session: "buffering a snapshot (one change)",
    event: upsert(6),
    next: "buffering from 0: [put hub/shop/a@001, put hub/shop/a@002]",
    effects: [],
  },
  {
    session: "buffering a snapshot (one change)",
    event: remove(6),
    next: "buffering from 0: [put hub/shop/a@001, delete hub/shop/b]",
    effects: [],
  },
  {
    session: "buffering a snapshot (one change)",
    event: synced(5),
    next: "live @5",
    effects: ["synced @5: [put hub/shop/a@001]"],
  },
  {
    session: "buffering a snapshot (empty)",
    event: synced(3),
    next: "live @3",
    effects: ["synced @3: []"],
  },
  {
    session: "buffering a snapshot (one change)",
    event: synced(5, true),
    next: "buffering from 0: [put hub/shop/a@001]",
    effects: ["protocol error: SYNCED says the stream resumed, but the agent asked for a snapshot"],
  },
  {
    session: "buffering a snapshot (one change)",
    event: keepalive(9),
    next: "buffering from 0: [put hub/shop/a@001]",
    effects: [],
  },
  {
    session: "buffering a snapshot (one change)",
    event: unknown(9),
    next: "buffering from 0: [put hub/shop/a@001]",
    effects: [],
  },
  // Buffering a resume: SYNCED(resumed) applies the replay, unless it goes back.
  {
    session: "buffering a resume from 5",
    event: snapshot(7),
    next: "buffering from 5: [put hub/shop/a@002, put hub/shop/a@001]",
    effects: [],
  },
  {
    session: "buffering a resume from 5",
    event: synced(6, true),
    next: "live @6",
    effects: ["synced resumed @6: [put hub/shop/a@002]"],
  },
  {
    session: "buffering a resume from 5",
    event: synced(5, true),
    next: "live @5",
    effects: ["synced resumed @5: [put hub/shop/a@002]"],
  },
  {
    session: "buffering a resume from 5",
    event: synced(4, true),
    next: "buffering from 5: [put hub/shop/a@002]",
    effects: ["protocol error: SYNCED resumed at revision 4, before the resume point 5"],
  },
  {
    // A poll moved the resume point to 12 while the stream was buffering.
    session: "buffering a resume from 5",
    event: synced(9, true),
    resumePoint: 12,
    next: "buffering from 5: [put hub/shop/a@002]",
    effects: ["protocol error: SYNCED resumed at revision 9, before the resume point 12"],
  },
  {
    // A registrar may answer a resume with a fresh snapshot: it replaces the state.
    session: "buffering a resume from 5",
    event: synced(2, false),
    next: "live @2",
    effects: ["synced @2: [put hub/shop/a@002]"],
  },
  {
    session: "buffering a resume from 5",
    event: keepalive(9),
    next: "buffering from 5: [put hub/shop/a@002]",
    effects: [],
  },
  // Live: changes apply as they come, in revision order; keep-alives advance.
  {
    session: "live at 8",
    event: snapshot(9),
    next: "live @8",
    effects: ["protocol error: SNAPSHOT event after SYNCED"],
  },
  {
    session: "live at 8",
    event: upsert(9),
    next: "live @9",
    effects: ["change @9: put hub/shop/a@002"],
  },
  {
    session: "live at 8",
    event: upsert(8),
    next: "live @8",
    effects: ["change @8: put hub/shop/a@002"],
  },
  {
    session: "live at 8",
    event: upsert(3),
    next: "live @8",
    effects: ["protocol error: UPSERT at revision 3 after revision 8"],
  },
  {
    session: "live at 8",
    event: remove(10),
    next: "live @10",
    effects: ["change @10: delete hub/shop/b"],
  },
  {
    session: "live at 8",
    event: remove(7),
    next: "live @8",
    effects: ["protocol error: DELETE at revision 7 after revision 8"],
  },
  {
    session: "live at 8",
    event: synced(9),
    next: "live @8",
    effects: ["protocol error: a second SYNCED event"],
  },
  {
    session: "live at 8",
    event: synced(9, true),
    next: "live @8",
    effects: ["protocol error: a second SYNCED event"],
  },
  {
    session: "live at 8",
    event: keepalive(11),
    next: "live @11",
    effects: ["advance @11"],
  },
  { session: "live at 8", event: keepalive(8), next: "live @8", effects: [] },
  { session: "live at 8", event: keepalive(2), next: "live @8", effects: [] },
  { session: "live at 8", event: unknown(20), next: "live @8", effects: [] },
];

const defaultResumePoint = (session: WatchSession) =>
  session.phase === "live" ? session.appliedRevision : session.resume;

describe("watch session: step", () => {
  for (const row of rows) {
    const label = WatchEventType[row.event.type] ?? `type ${row.event.type}`;
    const detail = row.event.type === WatchEventType.SYNCED && row.event.resumed ? " resumed" : "";
    it(`${row.session} + ${label}${detail} at ${row.event.revision}${row.resumePoint === undefined ? "" : ` (resume point ${row.resumePoint})`}`, () => {
      const session = sessions[row.session]?.() as WatchSession;
      const resumePoint =
        row.resumePoint === undefined ? defaultResumePoint(session) : BigInt(row.resumePoint);
      expect(describeStep(step(session, row.event, resumePoint))).toEqual({
        session: row.next,
        effects: row.effects,
      });
    });
  }

  it("covers every phase with every event type", () => {
    const types = [...new Set(rows.map((row) => row.event.type))].sort();
    expect(types).toEqual(
      [
        WatchEventType.SNAPSHOT,
        WatchEventType.SYNCED,
        WatchEventType.UPSERT,
        WatchEventType.DELETE,
        WatchEventType.KEEPALIVE,
        99,
      ].sort(),
    );
    for (const name of Object.keys(sessions)) {
      const phase = sessions[name]?.().phase;
      const covered = rows.filter((row) => sessions[row.session]?.().phase === phase);
      expect(new Set(covered.map((row) => row.event.type)).size, name).toBe(6);
    }
  });

  it("changes neither the session nor the event it is given", () => {
    const session = sessionAfter(0, snapshot(5), remove(5));
    const before = describeSession(session);
    const frozen = Object.freeze(session);
    const first = describeStep(step(frozen, synced(5), 0n));
    expect(describeStep(step(frozen, synced(5), 0n))).toEqual(first);
    expect(describeSession(frozen)).toBe(before);
    const buffered = step(frozen, upsert(6), 0n);
    expect(describeSession(buffered.session)).toBe(
      "buffering from 0: [put hub/shop/a@001, delete hub/shop/b, put hub/shop/a@002]",
    );
    expect(describeSession(frozen)).toBe(before);
  });

  it(`buffers at most ${MAX_BUFFERED_EVENTS} events before SYNCED`, () => {
    let session: WatchSession = openSession(0n);
    const e = snapshot(5);
    for (let i = 0; i < MAX_BUFFERED_EVENTS; i++) {
      const next = step(session, e, 0n);
      if (next.effects.length > 0) throw new Error(`effects at event ${i}`);
      session = next.session;
    }
    const over = step(session, e, 0n);
    expect(over.effects).toEqual([
      { type: "protocol-error", message: `more than ${MAX_BUFFERED_EVENTS} events before SYNCED` },
    ]);
    expect(over.session).toBe(session);
    const done = step(session, synced(5), 0n);
    expect(done.effects[0]?.type === "synced" && done.effects[0].changes.length).toBe(
      MAX_BUFFERED_EVENTS,
    );
  });
});

describe("watch session: the change an event carries", () => {
  const cases: [string, WatchConfigResponse, string][] = [
    ["SNAPSHOT is a put", snapshot(1), "put hub/shop/a@001"],
    ["UPSERT is a put", upsert(1), "put hub/shop/a@002"],
    ["DELETE is a delete", remove(1), "delete hub/shop/b"],
  ];
  for (const [name, e, expected] of cases) {
    it(name, () => {
      const change = changeOf(e);
      expect(describeChange(change)).toBe(expected);
      expect(change.projection).toBe(e.projection);
    });
  }
});

describe("watch session: the revision a new stream resumes from", () => {
  const cases: [string, { services: string[] } | undefined, string[], bigint][] = [
    ["no state: a snapshot", undefined, ["shop/a"], 0n],
    [
      "a state for the same set: the resume point",
      { services: ["shop/a", "shop/b"] },
      ["shop/a", "shop/b"],
      42n,
    ],
    ["a state for another set: a snapshot", { services: ["shop/a"] }, ["shop/a", "shop/b"], 0n],
    ["a state for a shorter set: a snapshot", { services: ["shop/a", "shop/b"] }, ["shop/a"], 0n],
    ["a state for the empty set, watching it: the resume point", { services: [] }, [], 42n],
  ];
  for (const [name, held, services, expected] of cases) {
    it(name, () => {
      expect(resumeRevision(held, services, 42n)).toBe(expected);
    });
  }

  it("opens buffering, with nothing buffered", () => {
    expect(openSession(7n)).toEqual({ phase: "buffering", resume: 7n, buffered: undefined });
    expect(bufferedChanges(openSession(7n))).toEqual([]);
  });
});
