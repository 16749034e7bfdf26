/**
 * The GEP-713 `status.ancestors` entries the registrar wants on one attached
 * policy (BackendTLSPolicy, HTTPFilter, VirtualHost): one per distinct
 * Service its targetRefs (a VirtualHost: its one targetRef) name, when that
 * Service is projected, or does not exist and the projector reported the
 * policy; each with an `Accepted` condition (reasons Accepted, Invalid,
 * Conflicted, TargetNotFound). Pure, no I/O.
 */
import type { KubeObject } from "./kube-object.js";
import type { RouteRejection } from "./projector.js";
import { field, isJsonObject, type JsonObject } from "./projector-fields.js";
import { type ObjectProblems, problemKey, type StatusContext } from "./route-status.js";
import type { WantedEntry } from "./status-merge.js";
import { policyReasonOf } from "./status-reasons.js";

/**
 * The ancestor entries wanted on `policy` (kind `kind`, namespace
 * `namespace`), in targetRef order. A target's `Accepted` is False with the
 * mapped reason of the policy's problem for it: a rejection (the policy is
 * left out everywhere) or a warning (left out on that target) naming the
 * Service, or an `unknown_target` one for a Service that does not exist, or
 * else any rejection; True when there is none.
 */
export function wantedPolicyAncestors(
  policy: KubeObject,
  kind: string,
  namespace: string,
  context: StatusContext,
): WantedEntry[] {
  const problems = context.problems.get(problemKey(kind, namespace, policy.metadata?.name ?? ""));
  const spec = isJsonObject(policy.spec) ? policy.spec : {};
  const raw = kind === "VirtualHost" ? [field(spec, "targetRef")] : field(spec, "targetRefs");
  const entries: WantedEntry[] = [];
  const seen = new Set<string>();
  for (const target of Array.isArray(raw) ? raw : []) {
    if (
      !isJsonObject(target) ||
      field(target, "group") !== "" ||
      field(target, "kind") !== "Service"
    )
      continue;
    const name = field(target, "name");
    if (typeof name !== "string") continue;
    const key = `${namespace}/${name}`;
    const missing = !context.ports.has(key);
    if (seen.has(key) || !(context.services.has(key) || (missing && problems !== undefined)))
      continue;
    seen.add(key);
    const ref: JsonObject = { group: "", kind: "Service", namespace, name };
    const problem = problemFor(problems, key, missing);
    entries.push({
      ref,
      conditions: [
        problem === undefined
          ? {
              type: "Accepted",
              status: "True",
              reason: "Accepted",
              message: `exported with the projection of Service ${key}`,
            }
          : {
              type: "Accepted",
              status: "False",
              reason: policyReasonOf(problem.reason),
              message: problem.message,
            },
      ],
    });
  }
  return entries;
}

/** The problem deciding the policy's status on Service `key` (see {@link wantedPolicyAncestors}). */
function problemFor(
  problems: ObjectProblems | undefined,
  key: string,
  missing: boolean,
): RouteRejection | undefined {
  if (problems === undefined) return undefined;
  for (const list of [problems.rejections, problems.warnings]) {
    const named = list.find((p) => p.services.includes(key));
    if (named !== undefined) return named;
    const unknown = missing ? list.find((p) => p.reason === "unknown_target") : undefined;
    if (unknown !== undefined) return unknown;
  }
  return problems.rejections[0];
}
