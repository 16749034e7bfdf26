/**
 * What the status plan may skip: per object (its status path), the
 * resourceVersion and the inputs of the last plan that found its status in
 * sync. An object whose resourceVersion and inputs (its own rejections and
 * warnings, and for each Service it refers to: whether it is projected and
 * its ports) are both unchanged is skipped without building or comparing its
 * status: a plan of the same object from the same inputs would find it in
 * sync again. An object the plan found out of sync is not remembered, so it
 * is planned every time until a plan finds it in sync (after its write
 * landed and the watch brought its new resourceVersion). Synchronous, no I/O.
 */
import type { KubeObject } from "./kube-object.js";
import { field, isJsonObject } from "./projector-fields.js";
import { problemKey, type StatusContext } from "./route-status.js";

/** The objects last planned in sync, and whether one may be skipped now. */
export interface StatusMemo {
  /** A plan begins: what it neither skips nor finds in sync again is forgotten (deleted objects). */
  begin(): void;
  /** Whether the object at `path` was last planned in sync at `resourceVersion` from `inputs`. */
  unchanged(path: string, resourceVersion: string, inputs: string): boolean;
  /** The plan found the object at `path` in sync at `resourceVersion` from `inputs`. */
  inSync(path: string, resourceVersion: string, inputs: string): void;
  /** The object at `path` must be planned again (out of sync, or its write failed). */
  forget(path: string): void;
  /** Everything must be planned again (a pause, a new leadership term). */
  clear(): void;
  /** How many objects are remembered in sync. */
  readonly size: number;
}

/** One object planned in sync. */
interface Entry {
  readonly resourceVersion: string;
  readonly inputs: string;
}

/** Creates an empty memo: everything is planned until found in sync. */
export function createStatusMemo(): StatusMemo {
  let current = new Map<string, Entry>();
  let previous = new Map<string, Entry>();
  return {
    begin: () => {
      previous = current;
      current = new Map();
    },
    unchanged: (path, resourceVersion, inputs) => {
      const entry = current.get(path) ?? previous.get(path);
      if (entry?.resourceVersion !== resourceVersion || entry.inputs !== inputs) return false;
      current.set(path, entry);
      return true;
    },
    inSync: (path, resourceVersion, inputs) => {
      current.set(path, { resourceVersion, inputs });
    },
    forget: (path) => {
      current.delete(path);
      previous.delete(path);
    },
    clear: () => {
      current.clear();
      previous.clear();
    },
    get size() {
      return current.size;
    },
  };
}

/**
 * The inputs the status of `object` (kind `kind`, namespace `namespace`,
 * whose status list is `list`) is decided from besides the object itself,
 * as a string that is equal exactly when they are: its rejections and
 * warnings in `context`, and for each Service its parentRefs (a route) or
 * targetRefs (a policy; a VirtualHost's one targetRef) name, whether the hub
 * projects it and its ports (none: it does not exist), and for a route, the
 * fleet's summary of the Service when `context.fleet` is given.
 */
export function statusInputsOf(
  object: KubeObject,
  kind: string,
  namespace: string,
  list: "parents" | "ancestors",
  context: StatusContext,
): string {
  const problems = context.problems.get(problemKey(kind, namespace, object.metadata?.name ?? ""));
  const spec = isJsonObject(object.spec) ? object.spec : {};
  let refs: unknown;
  if (list === "parents") refs = field(spec, "parentRefs");
  else refs = kind === "VirtualHost" ? [field(spec, "targetRef")] : field(spec, "targetRefs");
  let inputs = problems === undefined ? "" : JSON.stringify(problems);
  for (const ref of Array.isArray(refs) ? refs : []) {
    if (!isJsonObject(ref) || field(ref, "kind") !== "Service") continue;
    const refNamespace = list === "parents" ? (field(ref, "namespace") ?? namespace) : namespace;
    const key = `${String(refNamespace)}/${String(field(ref, "name"))}`;
    inputs += `\n${key} ${context.services.has(key) ? 1 : 0} ${portsOf(context.ports.get(key))}`;
    if (list === "parents" && context.fleet !== undefined) {
      inputs += ` ${JSON.stringify(context.fleet.get(key) ?? null)}`;
    }
  }
  return inputs;
}

/** Each Service's ports as {@link statusInputsOf} writes them, made once per list. */
const described = new WeakMap<object, string>();

/** `ports` as `name:port,…`; `-` when the Service does not exist. */
function portsOf(
  ports: readonly { readonly name: string; readonly port: number }[] | undefined,
): string {
  if (ports === undefined) return "-";
  let text = described.get(ports);
  if (text === undefined) {
    text = ports.map((p) => `${p.name}:${p.port}`).join();
    described.set(ports, text);
  }
  return text;
}
