/**
 * Probes a URL the way the kubelet does (a new connection per probe, a
 * timeout, no keep-alive) at a fixed interval, and records how long each
 * answer took and which probes failed. It runs in a worker thread of its
 * own (`probe-worker.ts`, started by `health-prober.ts`), so that the
 * coordinator's own work cannot delay a probe and be blamed on the
 * registrar.
 */
import { get } from "node:http";
import { type LatencySummary, summarize } from "../stats.js";

/** What a prober saw between two reads. */
export interface ProbeSummary {
  /** Probes sent. */
  readonly probes: number;
  /** Probes not answered 200 within the timeout. */
  readonly failures: number;
  /** Latency of the probes answered 200 in time. */
  readonly latency: LatencySummary;
  /** The longest stretch, in ms, without a successful probe (from one success to the next). */
  readonly longestGapMs: number;
}

/** A running probe loop. */
export interface ProbeLoop {
  /** What was seen since the last call (or the start), and starts a new window. */
  take(): ProbeSummary;
  /** Stops probing. */
  stop(): void;
}

/** Probes `url` every `intervalMs`; a probe not answered 200 within `timeoutMs` fails. */
export function startProbeLoop(url: string, intervalMs: number, timeoutMs: number): ProbeLoop {
  let latencies: number[] = [];
  let probes = 0;
  let failures = 0;
  let lastSuccess = performance.now();
  let longestGapMs = 0;
  const probe = () => {
    probes++;
    const started = performance.now();
    let done = false;
    const finish = (ok: boolean) => {
      if (done) return;
      done = true;
      const at = performance.now();
      if (!ok) {
        failures++;
        return;
      }
      latencies.push(at - started);
      longestGapMs = Math.max(longestGapMs, at - lastSuccess);
      lastSuccess = at;
    };
    const request = get(url, { agent: false, timeout: timeoutMs }, (response) => {
      response.resume();
      response.on("end", () =>
        finish(response.statusCode === 200 && performance.now() - started <= timeoutMs),
      );
      response.on("error", () => finish(false));
    });
    request.on("timeout", () => {
      finish(false);
      request.destroy();
    });
    request.on("error", () => finish(false));
  };
  const timer = setInterval(probe, intervalMs);
  return {
    take() {
      longestGapMs = Math.max(longestGapMs, performance.now() - lastSuccess);
      const summary = {
        probes,
        failures,
        latency: summarize(latencies),
        longestGapMs: Math.round(longestGapMs),
      };
      latencies = [];
      probes = 0;
      failures = 0;
      longestGapMs = 0;
      return summary;
    },
    stop() {
      clearInterval(timer);
    },
  };
}
