/**
 * BackendTLSPolicy on the projection: each valid policy attached to the
 * in-scope Services its targetRefs name (a Service in the policy's own
 * namespace, every port or the port a sectionName names), with the Gateway
 * API's conflict rule: of the policies targeting one Service and sectionName,
 * the one created first wins, then the one first by namespace/name; each
 * other one is `conflicted` on that target. Pure and deterministic, no I/O.
 */
import { create } from "@bufbuild/protobuf";
import { type BackendTls, BackendTlsSchema } from "../../gen/aether/registry/v1/projection_pb.js";
import type { KubeObject } from "./kube-object.js";
import { type ReadBackendTlsPolicy, readBackendTlsPolicy } from "./projector-backend-tls-read.js";
import { FieldError, field, isJsonObject, type JsonObject } from "./projector-fields.js";
import {
  BACKEND_TLS_POLICY,
  compareOldestFirst,
  compareStrings,
  getOrCreate,
  type ObjectIndex,
  type ServiceInfo,
  whyOlderWins,
} from "./projector-index.js";

/** A problem of one policy, before it is known to be a rejection or a warning. */
export interface PolicyProblem {
  /** The policy's namespace (`""` when it has none). */
  readonly namespace: string;
  /** The policy's name (`""` when it has none). */
  readonly name: string;
  /** The machine-readable reason. */
  readonly reason: string;
  /** A sentence naming the field path. */
  readonly message: string;
  /** The in-scope services concerned, sorted. */
  readonly services: readonly string[];
}

/** What {@link attachBackendTls} gives. */
export interface BackendTlsAttachment {
  /** The entries of each in-scope service, sorted by port, then section name. */
  readonly entries: Map<string, BackendTls[]>;
  /** Policies left out entirely (nothing of them is carried). */
  readonly rejections: PolicyProblem[];
  /** Problems of policies carried on at least one target. */
  readonly warnings: PolicyProblem[];
}

interface Candidate {
  readonly policy: ReadBackendTlsPolicy;
  readonly service: ServiceInfo;
  readonly port: number;
  readonly sectionName: string;
  readonly at: number;
}

/**
 * Attaches the BackendTLSPolicies of `index` to the services `inScope`
 * accepts. A policy is considered when one of its targetRefs (group `""`,
 * kind `Service`) names an in-scope Service or a Service that does not exist;
 * targetRefs of other kinds are not this projection's and are ignored. The
 * problems: whatever {@link readBackendTlsPolicy} throws, `duplicate_object`,
 * `unknown_target` (no such Service, or no port of that sectionName) and
 * `conflicted` (another policy wins the target). A policy carried on no
 * target is rejected; otherwise its problems are warnings. Never throws.
 */
export function attachBackendTls(
  index: ObjectIndex,
  inScope: (key: string) => boolean,
): BackendTlsAttachment {
  const rejections: PolicyProblem[] = [];
  const problems = new Map<ReadBackendTlsPolicy, PolicyProblem[]>();
  const candidates = new Map<string, Candidate[]>();
  for (const object of index.unidentified(BACKEND_TLS_POLICY)) {
    rejections.push(
      problemOf(
        object,
        "invalid_object",
        "the object has no usable metadata.namespace and metadata.name",
        [],
      ),
    );
  }
  for (const object of index.list(BACKEND_TLS_POLICY)) {
    const services = relevantServices(object, index, inScope);
    if (services === undefined) continue;
    const { namespace, name } = object.metadata as { namespace: string; name: string };
    if (index.isAmbiguous(BACKEND_TLS_POLICY, namespace, name)) {
      const message = `the snapshot holds several different BackendTLSPolicy objects named ${namespace}/${name}`;
      rejections.push(problemOf(object, "duplicate_object", message, services));
      continue;
    }
    let policy: ReadBackendTlsPolicy;
    try {
      policy = readBackendTlsPolicy(object, index);
    } catch (error) {
      const reason = error instanceof FieldError ? error.reason : "invalid_object";
      const message = error instanceof Error ? error.message : String(error);
      rejections.push(problemOf(object, reason, message, services));
      continue;
    }
    const own = getOrCreate(problems, policy, () => []);
    for (const candidate of resolveTargets(policy, index, inScope, own)) {
      getOrCreate(
        candidates,
        `${candidate.service.key}\u0000${candidate.sectionName}`,
        () => [],
      ).push(candidate);
    }
  }
  const entries = new Map<string, BackendTls[]>();
  const carried = new Set<ReadBackendTlsPolicy>();
  for (const contenders of candidates.values()) {
    const [winner, ...losers] = contenders.sort((a, b) => compareOldestFirst(a.policy, b.policy));
    if (winner === undefined) continue;
    carried.add(winner.policy);
    getOrCreate(entries, winner.service.key, () => []).push(entryOf(winner));
    for (const loser of losers)
      (problems.get(loser.policy) as PolicyProblem[]).push(conflict(loser, winner));
  }
  for (const list of entries.values()) list.sort(compareEntries);
  const warnings: PolicyProblem[] = [];
  for (const [policy, list] of problems)
    (carried.has(policy) ? warnings : rejections).push(...list);
  return { entries, rejections, warnings };
}

/**
 * The in-scope Services the policy's Service targetRefs name, sorted, read
 * leniently (the full validation comes later); undefined when the policy is
 * not this projection's concern (no Service targetRef naming an in-scope
 * Service or a missing one).
 */
function relevantServices(
  object: KubeObject,
  index: ObjectIndex,
  inScope: (key: string) => boolean,
): string[] | undefined {
  const namespace = (object.metadata as JsonObject).namespace as string;
  const spec = isJsonObject(object.spec) ? object.spec : {};
  const list = field(spec, "targetRefs");
  let relevant = false;
  const services = new Set<string>();
  for (const raw of Array.isArray(list) ? list : []) {
    if (!isServiceRef(raw)) continue;
    const name = field(raw, "name");
    if (typeof name !== "string") continue;
    const service = index.service(namespace, name);
    const key = `${namespace}/${name}`;
    if (service === undefined) relevant = true;
    else if (inScope(key)) {
      relevant = true;
      services.add(key);
    }
  }
  return relevant ? [...services].sort(compareStrings) : undefined;
}

function isServiceRef(raw: unknown): raw is JsonObject {
  return isJsonObject(raw) && field(raw, "group") === "" && field(raw, "kind") === "Service";
}

/** The in-scope ports a valid policy targets; problems for targets that resolve to nothing. */
function resolveTargets(
  policy: ReadBackendTlsPolicy,
  index: ObjectIndex,
  inScope: (key: string) => boolean,
  problems: PolicyProblem[],
): Candidate[] {
  const candidates: Candidate[] = [];
  for (const target of policy.targets) {
    if (target.group !== "" || target.kind !== "Service") continue;
    const key = `${policy.namespace}/${target.name}`;
    const service = index.service(policy.namespace, target.name);
    const path = `spec.targetRefs[${target.index}]`;
    if (service === undefined) {
      problems.push(
        policyProblem(
          policy,
          "unknown_target",
          `${path} names Service ${key}, which does not exist`,
          [],
        ),
      );
      continue;
    }
    if (!inScope(key)) continue;
    const sectionName = target.sectionName ?? "";
    const port = sectionName === "" ? undefined : service.ports.find((p) => p.name === sectionName);
    if (sectionName !== "" && port === undefined) {
      const message = `${path} names sectionName ${JSON.stringify(sectionName)} of Service ${key}, which has no port of that name`;
      problems.push(policyProblem(policy, "unknown_target", message, [key]));
      continue;
    }
    candidates.push({ policy, service, port: port?.port ?? 0, sectionName, at: target.index });
  }
  return candidates;
}

function compareEntries(a: BackendTls, b: BackendTls): number {
  return a.port - b.port || compareStrings(a.sectionName, b.sectionName);
}

function entryOf(candidate: Candidate): BackendTls {
  const { policy } = candidate;
  return create(BackendTlsSchema, {
    port: candidate.port,
    sectionName: candidate.sectionName,
    hostname: policy.hostname,
    caCertificatesPem: policy.caCertificatesPem,
    wellKnownCaCertificates: policy.wellKnownCaCertificates,
    subjectAltNames: [...policy.subjectAltNames],
    options: [...policy.options],
    policyNamespace: policy.namespace,
    policyName: policy.name,
  });
}

function conflict(loser: Candidate, winner: Candidate): PolicyProblem {
  const what =
    loser.sectionName === "" ? "every port" : `sectionName ${JSON.stringify(loser.sectionName)}`;
  const why = whyOlderWins(winner.policy, loser.policy);
  const message = `spec.targetRefs[${loser.at}] targets ${what} of Service ${loser.service.key}, which BackendTLSPolicy ${winner.policy.namespace}/${winner.policy.name} also targets and wins (it ${why})`;
  return policyProblem(loser.policy, "conflicted", message, [loser.service.key]);
}

function policyProblem(
  policy: ReadBackendTlsPolicy,
  reason: string,
  message: string,
  services: readonly string[],
): PolicyProblem {
  return { namespace: policy.namespace, name: policy.name, reason, message, services };
}

function problemOf(
  object: KubeObject,
  reason: string,
  message: string,
  services: readonly string[],
): PolicyProblem {
  const metadata: unknown = isJsonObject(object) ? object.metadata : undefined;
  const read = (key: string): string => {
    const value = isJsonObject(metadata) ? field(metadata, key) : undefined;
    return typeof value === "string" ? value : "";
  };
  return { namespace: read("namespace"), name: read("name"), reason, message, services };
}
