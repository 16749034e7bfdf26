/**
 * The messages between the benchmark's coordinator (`bench/main.ts`) and its
 * agent workers (`bench/agent-worker.ts`), over the child-process IPC channel
 * (advanced serialization). Timestamps are wall-clock milliseconds with
 * sub-millisecond precision (`performance.timeOrigin + performance.now()`),
 * comparable across the processes of one machine.
 */

import type { ClientTlsConfig } from "../services/process/client-tls-flags.js";

/** One agent a worker hosts. */
export interface WorkerAgentSpec {
  /** The agent's index in the scenario. */
  readonly id: number;
  /** Its dependency set. */
  readonly deps: readonly string[];
}

/** An agent's `--origin-keys` file and whether it has `--require-signatures`. */
export interface AgentSignatureOptions {
  readonly originKeysFile: string;
  readonly require: boolean;
}

/** Coordinator → worker. */
export type WorkerCommand =
  | {
      readonly type: "start";
      /** The registrar's base URL. */
      readonly registrar: string;
      /** The agents to create and start. */
      readonly agents: readonly WorkerAgentSpec[];
      /** `watch` or `poll`. */
      readonly mode: "watch" | "poll";
      /** The poll interval in ms; undefined keeps the agent's default. */
      readonly pollIntervalMs: number | undefined;
      /** The keep-alive timeout in ms (longer than the registrar's keep-alive interval). */
      readonly keepaliveTimeoutMs: number;
      /**
       * Each agent makes its own registrar connection, as aether-agent does
       * (over https:// with `tls`), instead of the counted one: no bytes and
       * no SYNCED reports for these agents.
       */
      readonly ownConnection?: { readonly tls?: ClientTlsConfig };
      /**
       * The agents verify signatures end to end (`--origin-keys FILE
       * --require-signatures`); undefined: they check none.
       */
      readonly signatures?: AgentSignatureOptions;
      /**
       * The agents report what they applied (`ReportAppliedConfig`) over the
       * counted connection; undefined or false: that connection's client has
       * no `reportAppliedConfig`, so they do not (an agent with its own
       * connection reports whatever this says, as aether-agent does).
       */
      readonly report?: boolean;
    }
  | { readonly type: "bytes"; readonly request: number }
  | { readonly type: "mark-resync" }
  /** Asks for every agent's `aether_config_agent_apply_seconds` totals. */
  | { readonly type: "apply-delays"; readonly request: number }
  | { readonly type: "cold-sync"; readonly request: number; readonly deps: readonly string[] }
  | { readonly type: "floor-watch"; readonly endpoint: string; readonly prefix: string }
  | { readonly type: "stop"; readonly request: number };

/** Worker → coordinator. */
export type WorkerReport =
  | { readonly type: "started"; readonly agents: number }
  /** Agents that became ready (their first complete state), with when. */
  | { readonly type: "ready"; readonly items: readonly { id: number; t: number }[] }
  /** Services whose version changed in an agent's route table, with when. */
  | {
      readonly type: "applied";
      readonly items: readonly { id: number; service: string; version: string; t: number }[];
    }
  /** Agents that received a SYNCED event after the last `mark-resync`. */
  | { readonly type: "synced"; readonly items: readonly { id: number; t: number }[] }
  /** Bytes read from the network so far, per agent id (all of its connections). */
  | {
      readonly type: "bytes";
      readonly request: number;
      readonly bytes: readonly [number, number][];
    }
  | { readonly type: "cold-sync"; readonly request: number; readonly ms: number }
  /** Each agent's apply-delay histogram totals: [agent id, sum in seconds, count]. */
  | {
      readonly type: "apply-delays";
      readonly request: number;
      readonly totals: readonly [number, number, number][];
    }
  | { readonly type: "floor-ready" }
  /** A raw etcd watch event on the floor prefix, with when it arrived. */
  | { readonly type: "floor"; readonly key: string; readonly t: number }
  | { readonly type: "stopped"; readonly request: number }
  | { readonly type: "error"; readonly message: string };

/** The current wall-clock time in ms, sub-millisecond precision. */
export function preciseNow(): number {
  return performance.timeOrigin + performance.now();
}
