/**
 * The messages between the hostile benchmark's coordinator
 * (`run-hostile.ts`) and its attacker processes (`attacker.ts`), over the
 * child-process IPC channel.
 */
import type { LatencySummary } from "../stats.js";

/** What one attacker process does; see `attacker.ts`. */
export type AttackMode =
  /** HTTP/2 connections of 100 streams each: ListAllConfig bodies never finished, or WatchConfig never read. */
  | "streams"
  /** TCP connections that send nothing, or an HTTP/2 header block never finished; reopened when closed. */
  | "idle"
  /** Well-formed unfiltered ListAllConfig calls, `count` at once, each slot calling again when answered. */
  | "lists";

/** Coordinator → attacker. */
export type AttackCommand =
  | {
      readonly type: "start";
      readonly mode: AttackMode;
      /** The registrar's API port on 127.0.0.1. */
      readonly port: number;
      /** Streams, connections or concurrent calls, by mode. */
      readonly count: number;
    }
  | { readonly type: "stop" };

/** What an attacker saw, reported when stopped. */
export interface AttackStats {
  readonly mode: AttackMode;
  /** Connections that were established. */
  readonly connectionsOpened: number;
  /** Established connections the server closed. */
  readonly connectionsClosed: number;
  /** Connection attempts that failed (refused, reset before established). */
  readonly connectErrors: number;
  /** The most connections open at once. */
  readonly peakOpen: number;
  /** `streams`: streams sent; `lists`: calls started. */
  readonly requests: number;
  /** `streams`: RST_STREAM frames received (on the connections that read). */
  readonly resets: number;
  /** `lists`: answers by outcome (`ok` or the Connect code's name). */
  readonly outcomes: Readonly<Record<string, number>>;
  /** `lists`: latency of the calls answered `ok`. */
  readonly okLatency: LatencySummary | undefined;
}

/** Attacker → coordinator. */
export type AttackReport =
  /** Loaded and waiting for its command (forking and loading costs CPU: done before a phase). */
  | { readonly type: "ready" }
  | { readonly type: "started" }
  | { readonly type: "stats"; readonly stats: AttackStats }
  | { readonly type: "error"; readonly message: string };
