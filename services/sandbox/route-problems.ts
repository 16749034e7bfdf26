/**
 * Loud reporting of bad manifests in the sandbox: a `dir:` object source (the
 * hub's exported mesh or a spoke's local routes) whose every snapshot is
 * projected with the shared projector, printing the routes it rejects, the
 * routes projected with a problem (an unresolvable backend answers 500) and
 * the files the source cannot read. Prints only when that set changes, and
 * says so once it is clean again.
 */
import type { KubeObject } from "../common/kube-object.js";
import { projectServices, type RouteRejection } from "../common/projector.js";
import type { Logger } from "../runtime/logger.js";
import { createDirSource } from "../sources/dir-source.js";
import type { ObjectSource, SourceProblem } from "../sources/object-source.js";

/** Options of {@link createReportedDirSource}. */
export interface ReportedDirSourceOptions {
  /** The directory of manifests. */
  readonly path: string;
  /** What the directory is, for the printed lines, for example `examples/mesh (hub export)`. */
  readonly label: string;
  /**
   * Project with `exportAll` (local routes: every routed Service is in
   * scope) instead of export semantics (only exported Services).
   */
  readonly exportAll: boolean;
  /** The source's logger. */
  readonly logger: Logger;
  /** Where the problem lines go. */
  readonly print: (line: string) => void;
}

/** A reported source; see {@link createReportedDirSource}. */
export interface ReportedDirSource {
  /** The source, for its owner (the export controller or the agent) to start and stop. */
  readonly source: ObjectSource;
  /** Stops reporting (the source itself is stopped by its owner). */
  stopReporting(): void;
}

/** The problem lines of one snapshot (empty when it is clean). Pure. */
export function describeRouteProblems(
  objects: readonly KubeObject[],
  exportAll: boolean,
  sourceProblems: readonly SourceProblem[],
): string[] {
  const output = projectServices(objects, { exportAll });
  const route = (r: RouteRejection) =>
    `${r.route.kind} ${r.route.namespace}/${r.route.name}: ${r.reason}: ${r.message}`;
  return [
    ...sourceProblems.map((p) => `UNREADABLE ${p.where}: ${p.message}`),
    ...output.rejections.map((r) => `REJECTED ${route(r)}`),
    ...output.warnings.map((r) => `PROBLEM ${route(r)}`),
  ];
}

/**
 * Wraps a logger so that every call of `warn`, `info` or `error` (on it or a
 * child) also calls `onLog`: the dir source reports new and cleared file
 * problems only through its logger, without a change of its snapshot.
 */
function tapLogger(logger: Logger, onLog: () => void): Logger {
  return new Proxy(logger, {
    get(target, property, receiver) {
      const value: unknown = Reflect.get(target, property, receiver);
      if (typeof value !== "function") return value;
      if (property === "child") {
        return (...args: unknown[]) => tapLogger(value.apply(target, args) as Logger, onLog);
      }
      if (property === "warn" || property === "info" || property === "error") {
        return (...args: unknown[]) => {
          onLog();
          return value.apply(target, args);
        };
      }
      return value.bind(target);
    },
  });
}

/**
 * Creates a `dir:` source that prints its route problems (see the module
 * comment) after its first snapshot and whenever they change.
 */
export function createReportedDirSource(options: ReportedDirSourceOptions): ReportedDirSource {
  const { label, print } = options;
  let previous = "";
  let reporting = true;
  let pending: NodeJS.Immediate | undefined;

  const check = () => {
    pending = undefined;
    if (!reporting || !source.synced) return;
    const lines = describeRouteProblems(source.snapshot(), options.exportAll, source.problems());
    const text = lines.join("\n");
    if (text === previous) return;
    const hadProblems = previous !== "";
    previous = text;
    if (lines.length === 0) {
      if (hadProblems) print(`ok: ${label}: every manifest is read and every route accepted`);
      return;
    }
    const bar = "!".repeat(72);
    print(bar);
    print(`!! ${label}: ${lines.length} problem(s); everything else is still served:`);
    for (const line of lines) print(`!!   ${line}`);
    print(bar);
  };
  /** Checks on a later turn: the source logs a problem before it records it. */
  const schedule = () => {
    if (reporting) pending ??= setImmediate(check);
  };

  const source = createDirSource({
    path: options.path,
    logger: tapLogger(options.logger, schedule),
  });
  const unsubscribe = source.onChange(schedule);
  source.whenSynced().then(schedule, () => {});
  return {
    source,
    stopReporting() {
      reporting = false;
      unsubscribe();
      if (pending !== undefined) clearImmediate(pending);
      pending = undefined;
    },
  };
}
