/**
 * Samples what agents apply (their `/routes` tables) in the background, and
 * judges the samples: a service that went missing (a DELETE reached the
 * agent) or a version that went back (an older version applied after a
 * newer one). A sampler sees only what its reads catch; the agents' own
 * "route table updated" lines (see {@link tableShrinks}) catch the rest.
 */
import { setTimeout as delay } from "node:timers/promises";
import { parseVersion } from "../../services/common/projection-version.js";
import type { AgentProcess, LogLine } from "./agent-process.js";

/** What one agent held at one sample: its versions by service. */
export type TableSample = Readonly<Record<string, string>>;

/** A sampler started by {@link sampleAgents}. */
export interface ApplySampler {
  /** The samples so far, per agent (in the order the agents were given). */
  readonly samples: readonly TableSample[][];
  /** Stops sampling and resolves once the last read is done. */
  stop(): Promise<void>;
}

/** Reads every agent's `/routes` every `intervalMs` until stopped; a failed read is skipped. */
export function sampleAgents(agents: readonly AgentProcess[], intervalMs = 25): ApplySampler {
  const samples: TableSample[][] = agents.map(() => []);
  let running = true;
  const loops = agents.map(async (agent, i) => {
    while (running) {
      try {
        const table = await agent.routes();
        samples[i]?.push(Object.fromEntries(table.map((e) => [e.service, e.version])));
      } catch {
        // The agent is busy or restarting: this sample is skipped, the next one counts.
      }
      await delay(intervalMs);
    }
  });
  return {
    samples,
    async stop() {
      running = false;
      await Promise.all(loops);
    },
  };
}

/**
 * Judges one agent's samples against the services it must hold: returns a
 * line per problem (a service of `services` missing from a sample, or a
 * service's version lower than in an earlier sample); empty when none.
 */
export function applyProblems(
  samples: readonly TableSample[],
  services: readonly string[],
): string[] {
  const problems: string[] = [];
  const highest = new Map<string, bigint>();
  samples.forEach((sample, index) => {
    for (const service of services) {
      const version = sample[service];
      if (version === undefined) {
        problems.push(`sample ${index}: ${service} missing`);
        continue;
      }
      const parsed = parseVersion(version);
      const before = highest.get(service);
      if (parsed === undefined) problems.push(`sample ${index}: ${service}@${version} unparsable`);
      else if (before !== undefined && parsed < before) {
        problems.push(`sample ${index}: ${service} went back to ${version}`);
      } else highest.set(service, parsed);
    }
  });
  return problems;
}

/** The service counts of the agent's "route table updated" lines that are below `count`. */
export function tableShrinks(logs: readonly LogLine[], count: number): number[] {
  return logs
    .filter((l) => l.msg === "route table updated")
    .map((l) => Number(l.services))
    .filter((n) => n < count);
}
