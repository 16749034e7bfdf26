/**
 * `npm run bench -- --idle-streams N`: the registrar's heap per idle
 * WatchConfig stream, on each path a stream can take (the WatchConfig lane,
 * connect-es), measured precisely: a registrar in its own process
 * (heap-registrar.ts, `node --expose-gc`) reports its heapUsed after forced
 * full collections until it stands still; the streams come from another
 * process (idle-client.ts), one HTTP/2 connection each, as agents connect.
 *
 * Per point (a registrar holding S services; at --services and at 10,000,
 * the target point): a warm-up (a few streams of each path opened
 * and closed, so the code they compile is not counted per stream), the
 * baseline, then per path: N connections (reading), a stream on each,
 * every one past SYNCED and idle (reading), all closed (reading, once the
 * registrar counts no stream).
 */
import { type ChildProcess, fork } from "node:child_process";
import { once } from "node:events";
import { availableParallelism, loadavg } from "node:os";
import { resolve } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { buildMains, progress } from "../run-bench.js";
import { createScenario } from "../scenario.js";
import type {
  HeapReading,
  HeapRegistrarReading,
  HeapRegistrarReady,
  IdleClientCommand,
  IdleClientDone,
  StreamPath,
} from "./idle-protocol.js";
import { perStream } from "./idle-streams-report.js";

/** The flags of the idle streams benchmark (see bench-flags.ts). */
export interface IdleStreamsFlags {
  /** Streams per path (N). */
  readonly streams: number;
  /** Services the registrar holds at the first point. */
  readonly services: number;
  /** Services each stream watches. */
  readonly deps: number;
  readonly seed: number;
}

/** One path's readings at one point. */
export interface IdleLeg {
  readonly path: StreamPath;
  /** Before its connections. */
  readonly baseline: HeapReading;
  /** With N connections open, no stream. */
  readonly connections: HeapReading;
  /** With N streams open and idle, one on each connection. */
  readonly streams: HeapReading;
  /** Once every stream and connection closed. */
  readonly closed: HeapReading;
  /** From the first stream opened to every one past SYNCED. */
  readonly streamsOpenMs: number;
  /** Response bytes the client read until every stream was past SYNCED. */
  readonly snapshotBytes: number;
  /** Connections and streams that failed. */
  readonly failures: number;
  readonly firstFailure?: string;
}

/** The registrar holding `services` services. */
export interface IdlePoint {
  readonly services: number;
  readonly legs: readonly IdleLeg[];
}

/** The raw results (bench/results/idle-streams.json). */
export interface IdleStreamsResults {
  readonly startedAt: string;
  /** 1-minute load averages at the start and the end (others' work too). */
  readonly machine: { cpus: number; node: string; loadAverage: number; loadAverageEnd: number };
  readonly flags: IdleStreamsFlags;
  readonly points: readonly IdlePoint[];
}

/** The services counts measured: `services`, and 10,000 when below it. */
export function idlePoints(services: number): number[] {
  return services < 10_000 ? [services, 10_000] : [services];
}

const WARM_UP_STREAMS = 16;
const HERE = import.meta.dirname;

/** Sends `message` to `child` and resolves with its next message. */
async function ask<T>(child: ChildProcess, message: object): Promise<T> {
  const answer = once(child, "message") as Promise<[T]>;
  child.send(message);
  return (await answer)[0];
}

/** Runs every point; see the module comment. */
export async function runIdleStreamsBench(flags: IdleStreamsFlags): Promise<IdleStreamsResults> {
  const startedAt = new Date().toISOString();
  const loadAverage = Math.round((loadavg()[0] ?? 0) * 100) / 100;
  progress("compiling the registrar (deploy/tsconfig.build.json → dist/)");
  buildMains();
  const points: IdlePoint[] = [];
  for (const services of idlePoints(flags.services)) {
    points.push(await runPoint(flags, services));
  }
  return {
    startedAt,
    machine: {
      ...{ cpus: availableParallelism(), node: process.version, loadAverage },
      loadAverageEnd: Math.round((loadavg()[0] ?? 0) * 100) / 100,
    },
    flags,
    points,
  };
}

async function runPoint(flags: IdleStreamsFlags, services: number): Promise<IdlePoint> {
  progress(`idle streams: a registrar (--expose-gc) holding ${services} services`);
  const registrar = fork(
    resolve(HERE, "heap-registrar.ts"),
    ["--services", String(services), "--max-streams", String(flags.streams)],
    {
      execArgv: ["--expose-gc", "--import", "tsx"],
      stdio: ["ignore", "inherit", "inherit", "ipc"],
    },
  );
  const client = fork(resolve(HERE, "idle-client.ts"), [], {
    execArgv: ["--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  try {
    const [ready] = (await Promise.race([
      once(registrar, "message"),
      once(registrar, "exit").then(([code]) => {
        throw new Error(`the heap registrar exited with ${code} before it was ready`);
      }),
    ])) as [HeapRegistrarReady];
    const scenario = createScenario({ ...flags, services, agents: flags.streams, changes: 0 });
    const deps = scenario.agents.map((a) => [...a.deps]);
    const command = (c: IdleClientCommand) => ask<IdleClientDone>(client, c);
    const measure = async () =>
      (await ask<HeapRegistrarReading>(registrar, { type: "measure" })).reading;
    /** Measures once the registrar counts `open` streams (at most 30 s). */
    const measureAt = async (open: number): Promise<HeapReading> => {
      for (let waited = 0; ; waited += 200) {
        const reading = await measure();
        if (reading.openStreams === open || waited >= 30_000) return reading;
        await delay(200);
      }
    };
    for (const path of ["lane", "connect-es"] as const) {
      await command({ type: "connect", url: ready.url, count: WARM_UP_STREAMS });
      await command({ type: "watch", path, deps: deps.slice(0, WARM_UP_STREAMS) });
      await command({ type: "close" });
    }
    const legs: IdleLeg[] = [];
    for (const path of ["lane", "connect-es"] as const) {
      const baseline = await measureAt(0);
      const opened = await command({ type: "connect", url: ready.url, count: flags.streams });
      const connections = await measure();
      const watched = await command({ type: "watch", path, deps });
      const streams = await measureAt(flags.streams);
      await command({ type: "close" });
      const closed = await measureAt(0);
      const failures = opened.failures + watched.failures;
      const firstFailure = opened.firstFailure ?? watched.firstFailure;
      const leg: IdleLeg = {
        ...{ path, baseline, connections, streams, closed },
        ...{ streamsOpenMs: watched.ms, snapshotBytes: watched.bytes, failures },
        ...(firstFailure === undefined ? {} : { firstFailure }),
      };
      const per = perStream(leg, flags.streams);
      progress(
        `idle streams: ${services} services, ${flags.streams} ${path} streams: heap ${per.heapKb} KiB per stream ` +
          `(${per.heapStreamOnlyKb} KiB stream + ${per.heapConnectionKb} KiB connection), ` +
          `RSS ${per.rssKb} KiB per stream, ${Math.round(streams.rss / 2 ** 20)} MiB in all; ${failures} failures`,
      );
      legs.push(leg);
    }
    return { services, legs };
  } finally {
    client.kill();
    registrar.send({ type: "stop" });
    await Promise.race([once(registrar, "exit"), delay(10_000)]);
    registrar.kill();
  }
}
