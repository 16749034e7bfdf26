/**
 * The import status publisher's encoder with a memory: what
 * `encodeStatuses(desiredServiceStatuses(inputs))` returns, byte for byte,
 * but a service whose inputs (served origin and version, agent tally,
 * rejections, local digest) are what they were last time keeps its last
 * encoding, the same `Uint8Array`, instead of a new message and a new
 * encoding. A registrar serving 10,000 services publishes every second
 * while the store moves; rebuilding every status made about 10 MB of
 * objects per round that lived until the next one, so V8 promoted them and
 * the old space (and the RSS) grew by hundreds of MB between major GCs
 * (bench/REPORT.md, "Registrar memory"). Pure: no clock, no I/O.
 */
import { toBinary } from "@bufbuild/protobuf";
import {
  type RejectedProjection,
  ServiceImportStatusSchema,
} from "../../gen/aether/registry/v1/fleet_pb.js";
import {
  type ImportRefusal,
  type ImportStatusInputs,
  refusalsByService,
  type ServiceStatusFacts,
  serviceStatus,
  statusServices,
} from "./import-status-plan.js";

/** Encodes the desired statuses, reusing what did not change since the last call. */
export interface StatusEncoder {
  /**
   * The encoding of every desired status, by service (the services of
   * `desiredServiceStatuses`, in no particular order); an unchanged service
   * maps to the very array the previous call returned for it. The map is
   * the encoder's own, changed in place by the next call (so that a round
   * allocates nothing for what did not change): read it before calling
   * again, copy what must outlive that.
   */
  encode(inputs: ImportStatusInputs): ReadonlyMap<string, Uint8Array>;
  /** Services remembered (those of the last call). */
  readonly size: number;
}

/** What a remembered encoding was made of, compared field by field (no key string built). */
interface Remembered {
  readonly origin: string;
  readonly version: string;
  readonly inSync: number;
  readonly behind: number;
  readonly rejecting: number;
  readonly localDigest: string;
  /** The rejections (import and agent) as one string; empty without any (the usual case). */
  readonly rejections: string;
  readonly bytes: Uint8Array;
  /** The last call that desired it. */
  round: number;
}

/** Creates an encoder with an empty memory. */
export function createStatusEncoder(): StatusEncoder {
  const memory = new Map<string, Remembered>();
  const encoded = new Map<string, Uint8Array>();
  let round = 0;
  return {
    get size() {
      return memory.size;
    },
    encode(inputs) {
      round++;
      const refusals = refusalsByService(inputs.refusals);
      const visit = (service: string): void => {
        const known = memory.get(service);
        if (known?.round === round) return;
        const served = inputs.served.get(service);
        const facts: ServiceStatusFacts = {
          service,
          served,
          refusals: refusals.get(service) ?? NO_REFUSALS,
          agents: inputs.agents.serviceAgents(service, served),
          localDigest: inputs.localDigests.get(service) ?? "",
        };
        const rejections = rejectionsKey(facts);
        if (known !== undefined && sameFacts(known, facts, rejections)) {
          known.round = round;
          return;
        }
        const made = remember(facts, rejections, round);
        memory.set(service, made);
        encoded.set(service, made.bytes);
      };
      for (const service of statusServices(inputs, refusals)) visit(service);
      for (const [service, known] of memory) {
        if (known.round === round) continue;
        memory.delete(service);
        encoded.delete(service);
      }
      return encoded;
    },
  };
}

const NO_REFUSALS: readonly ImportRefusal[] = [];

function remember(facts: ServiceStatusFacts, rejections: string, round: number): Remembered {
  const { tally } = facts.agents;
  return {
    origin: facts.served?.origin ?? "",
    version: facts.served?.version ?? "",
    inSync: tally.inSync,
    behind: tally.behind,
    rejecting: tally.rejecting,
    localDigest: facts.localDigest,
    rejections,
    bytes: toBinary(ServiceImportStatusSchema, serviceStatus(facts)),
    round,
  };
}

function sameFacts(known: Remembered, facts: ServiceStatusFacts, rejections: string): boolean {
  const { tally } = facts.agents;
  return (
    known.origin === (facts.served?.origin ?? "") &&
    known.version === (facts.served?.version ?? "") &&
    known.inSync === tally.inSync &&
    known.behind === tally.behind &&
    known.rejecting === tally.rejecting &&
    known.localDigest === facts.localDigest &&
    known.rejections === rejections
  );
}

/**
 * Every field of every rejection that reaches the status, as one string
 * (JSON, so no field can run into the next); empty when there are none.
 */
function rejectionsKey(facts: ServiceStatusFacts): string {
  if (facts.refusals.length === 0 && facts.agents.rejections.length === 0) return "";
  const rejection = (r: RejectedProjection) => [r.originCluster, r.version, r.reason, r.message];
  return JSON.stringify([
    facts.refusals.map((r) => [r.origin, r.version, r.reason, r.message]),
    facts.agents.rejections.map((r) => [...rejection(r.rejection), r.agents]),
  ]);
}
