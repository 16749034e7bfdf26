/**
 * The per-file state of the `dir:PATH` source: what each manifest file last
 * gave, which files a rescan reads again, and the snapshot assembled from
 * them.
 *
 * - A rescan re-reads only the files whose identity, size or times changed
 *   (several at a time); the objects of a file that was not re-read are the
 *   same objects as before.
 * - A file with a YAML error, or with a document that is not a Kubernetes
 *   object, keeps its last good objects (none if it never parsed) until it
 *   is fixed, with its problems. The whole file is held back, not only the
 *   bad document, so that a half-edited file never makes its objects
 *   disappear.
 * - The same object (API group, kind, namespace, name) in two places: the
 *   first by path keeps it, the other is a problem (one per file, counting
 *   the file's copies, however many objects a duplicated manifest holds).
 *
 * The decisions ({@link planReads}, {@link nextFileState},
 * {@link assembleFiles}) are pure functions; {@link createManifestFiles}
 * holds the state and does the reading.
 */
import { readFile as readFileCallback } from "node:fs";
import { promisify } from "node:util";
import { groupDigits } from "../common/bounded-list.js";
import { apiGroupOf, type KubeObject } from "../common/kube-object.js";
import { type ParsedObject, parseManifest } from "./dir-parse.js";
import {
  byCodeUnits,
  errorCode,
  type FoundFile,
  forEachLimited,
  IO_CONCURRENCY,
} from "./dir-scan.js";
import type { SourceProblem } from "./object-source.js";

/** Files larger than this are not read (a problem instead). */
const MAX_FILE_BYTES = 16 * 1024 * 1024;
/**
 * Reads a whole file. The callback `readFile` costs about half of what
 * `fs/promises`' FileHandle-based one does per small file, which counts when
 * a directory holds thousands of manifests.
 */
const readFile = promisify(readFileCallback);

/** What the source keeps about one manifest file. */
export interface FileState {
  /** Identity, size and times of the file when last read. */
  readonly signature: string;
  /** The last good objects of the file. */
  readonly objects: readonly ParsedObject[];
  /** The identity (see {@link objectIdentity}) of each of `objects`. */
  readonly identities: readonly string[];
  /** The problems of the last read (empty when it was good). */
  readonly problems: readonly SourceProblem[];
}

/** What reading one file gave (see {@link nextFileState}). */
export type FileRead =
  /** The file parsed cleanly into these objects. */
  | { readonly kind: "parsed"; readonly objects: readonly ParsedObject[] }
  /** The file was read but cannot be used (too large, a YAML error, not an object). */
  | { readonly kind: "unusable"; readonly problems: readonly SourceProblem[] }
  /** Reading the file failed, with this error code (`ENOENT`: it vanished) and message. */
  | { readonly kind: "unreadable"; readonly code: string | undefined; readonly message: string };

/** Which files a rescan reads again and which it forgets; see {@link planReads}. */
export interface ReadPlan {
  /** The files found that are new or whose signature changed, in the order found. */
  readonly reread: string[];
  /** The files known that the scan did not find, in the order known. */
  readonly removed: string[];
}

/**
 * Compares what the source knows (`known`, by path) with what a scan found:
 * a found file is read again unless a known file of the same path has the
 * same signature, and a known file not found is removed. Pure.
 */
export function planReads(
  known: ReadonlyMap<string, { readonly signature: string }>,
  found: ReadonlyMap<string, { readonly signature: string }>,
): ReadPlan {
  const reread = [...found]
    .filter(([path, file]) => known.get(path)?.signature !== file.signature)
    .map(([path]) => path);
  const removed = [...known.keys()].filter((path) => !found.has(path));
  return { reread, removed };
}

/**
 * The state of the file at `path` (of signature `signature`) after a read,
 * given its state before (undefined when the file is new): the read's
 * objects when it parsed; otherwise the last good objects (none when there
 * are none) with the problems. A file that vanished (`ENOENT`) is dropped
 * (undefined) when it was known; a new one is kept, empty, with the failure
 * as its problem. Pure.
 */
export function nextFileState(
  path: string,
  previous: FileState | undefined,
  signature: string,
  read: FileRead,
): FileState | undefined {
  const keep = (problems: readonly SourceProblem[]): FileState => ({
    signature,
    objects: previous?.objects ?? [],
    identities: previous?.identities ?? [],
    problems: [...problems],
  });
  switch (read.kind) {
    case "parsed":
      return {
        signature,
        objects: read.objects,
        identities: read.objects.map(({ object }) => objectIdentity(object)),
        problems: [],
      };
    case "unusable":
      return keep(read.problems);
    case "unreadable":
      if (read.code === "ENOENT" && previous !== undefined) return undefined;
      return keep([{ where: path, message: `cannot read file: ${read.message}` }]);
  }
}

/** A snapshot assembled from the files; see {@link assembleFiles}. */
export interface Assembled {
  /** The objects, by file (in path order) then document. */
  readonly objects: KubeObject[];
  /** The problems: the leading ones given, then each file's own and its duplicates. */
  readonly problems: SourceProblem[];
}

/**
 * Builds the snapshot and the problem list from `files`, visited in the
 * order of `paths` (every path of `files`, in code unit order): each file's
 * problems, and its last good objects except those defined by an earlier
 * file (the first definition of an object wins). The copies a file holds of
 * objects defined earlier make one problem for the file, at the first copy's
 * `path:line`, naming it and counting the others: a duplicated manifest of
 * a hundred thousand objects is one problem, not a hundred thousand.
 * `leading` (the scan's problems) come first. Pure.
 */
export function assembleFiles(
  files: ReadonlyMap<string, FileState>,
  paths: readonly string[],
  leading: readonly SourceProblem[],
): Assembled {
  const objects: KubeObject[] = [];
  const problems: SourceProblem[] = [...leading];
  /** Where each object is defined first: its file, and its index there. */
  const definedAt = new Map<string, [string, number]>();
  /** Where an object is defined first, as `path:line`. */
  const firstDefinition = ([firstPath, firstIndex]: [string, number]): string =>
    `${firstPath}:${(files.get(firstPath) as FileState).objects[firstIndex]?.line}`;
  for (const path of paths) {
    const state = files.get(path) as FileState;
    for (const problem of state.problems) problems.push(problem);
    /** The copies in this file of objects defined earlier: the first one, and how many. */
    let copies: { object: KubeObject; line: number; first: [string, number] } | undefined;
    let copyCount = 0;
    for (const [i, { object, line }] of state.objects.entries()) {
      const key = state.identities[i] as string;
      const first = definedAt.get(key);
      if (first !== undefined) {
        copies ??= { object, line, first };
        copyCount++;
        continue;
      }
      definedAt.set(key, [path, i]);
      objects.push(object);
    }
    if (copies === undefined) continue;
    const at = firstDefinition(copies.first);
    const message =
      copyCount === 1
        ? `${describeObject(copies.object)} is also defined at ${at}; this copy is ignored`
        : `${describeObject(copies.object)} and ${groupDigits(copyCount - 1)} more objects of this file are also defined earlier (the first at ${at}); these ${groupDigits(copyCount)} copies are ignored`;
    problems.push({ where: `${path}:${copies.line}`, message });
  }
  return { objects, problems };
}

/** How many distinct strings the source shares between its objects before it starts afresh. */
const MAX_INTERNED_STRINGS = 100_000;

/**
 * Compacts freshly parsed objects in place, for the source keeps them as
 * long as their files do not change: every string (object values, array
 * items; keys are shared by the engine already) is replaced by the equal
 * string in `table` (added when new), and every array by an exact-size copy.
 * Thousands of manifests repeat a few thousand strings (kinds, API versions,
 * port names, match and filter types), and every parse makes its own copies
 * of them; and a parser's arrays, grown one item at a time, keep room for
 * more. The table is cleared when it grows past {@link MAX_INTERNED_STRINGS},
 * so strings that went out of use are not kept forever.
 */
function compactObjects(objects: readonly ParsedObject[], table: Map<string, string>): void {
  if (table.size > MAX_INTERNED_STRINGS) table.clear();
  const shared = (text: string): string => {
    const known = table.get(text);
    if (known !== undefined) return known;
    table.set(text, text);
    return text;
  };
  /** Compacts `item` (a value of a container); returns what the container keeps. */
  const compact = (item: unknown): unknown => {
    if (typeof item === "string") return shared(item);
    if (Array.isArray(item)) {
      const copy = item.slice();
      stack.push(copy);
      return copy;
    }
    if (typeof item === "object" && item !== null) stack.push(item);
    return item;
  };
  const stack: object[] = objects.map((parsed) => parsed.object);
  for (let value = stack.pop(); value !== undefined; value = stack.pop()) {
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) value[i] = compact(value[i]);
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) record[key] = compact(record[key]);
  }
}

/**
 * The identity of an object across files: API group, kind, namespace and
 * name, joined by NUL characters. Two objects with the same identity are
 * the same object defined twice.
 */
export function objectIdentity(object: KubeObject): string {
  const metadata = object.metadata ?? {};
  return [apiGroupOf(object.apiVersion), object.kind, metadata.namespace ?? "", metadata.name].join(
    "\u0000",
  );
}

/** Describes an object for a message: `Kind namespace/name` or `Kind name`. */
function describeObject(object: KubeObject): string {
  const { namespace, name } = object.metadata ?? {};
  return `${object.kind} ${namespace === undefined ? "" : `${namespace}/`}${name}`;
}

/**
 * Reads and parses the file `found` (at `path`); the objects of a clean
 * parse are compacted with the strings of `strings` (see {@link compactObjects}).
 */
async function readManifestFile(
  path: string,
  found: FoundFile,
  strings: Map<string, string>,
): Promise<FileRead> {
  if (found.size > MAX_FILE_BYTES) {
    return {
      kind: "unusable",
      problems: [{ where: path, message: `is larger than ${MAX_FILE_BYTES} bytes; not read` }],
    };
  }
  let text: string;
  try {
    text = await readFile(found.absolute, "utf8");
  } catch (error) {
    return { kind: "unreadable", code: errorCode(error), message: (error as Error).message };
  }
  const parsed = parseManifest(text, path);
  if (parsed.problems.length > 0) return { kind: "unusable", problems: parsed.problems };
  compactObjects(parsed.objects, strings);
  return { kind: "parsed", objects: parsed.objects };
}

/** See {@link createManifestFiles}. */
export interface ManifestFiles {
  /** What to read again and what to forget after a scan found `found` (see {@link planReads}). */
  plan(found: ReadonlyMap<string, FoundFile>): ReadPlan;
  /**
   * Reads the files at `paths` (each in `found`), several at a time, and
   * records what each gave (see {@link nextFileState}).
   */
  read(paths: readonly string[], found: ReadonlyMap<string, FoundFile>): Promise<void>;
  /** Forgets the files at `paths` (no longer in the directory). */
  forget(paths: readonly string[]): void;
  /** The snapshot of the files now, after the problems `leading` (see {@link assembleFiles}). */
  assemble(leading: readonly SourceProblem[]): Assembled;
}

/** Creates the empty state of a directory's manifest files. */
export function createManifestFiles(): ManifestFiles {
  const files = new Map<string, FileState>();
  /** The paths of `files` in code unit order; undefined when files were added or removed since. */
  let sortedPaths: string[] | undefined;
  /** The strings the objects share (see {@link compactObjects}). */
  const strings = new Map<string, string>();

  /** Reads one changed file into `files` (or drops it when it vanished). */
  const readChanged = async (path: string, found: FoundFile): Promise<void> => {
    const previous = files.get(path);
    const next = nextFileState(
      path,
      previous,
      found.signature,
      await readManifestFile(path, found, strings),
    );
    if (next === undefined) {
      files.delete(path);
      sortedPaths = undefined;
      return;
    }
    if (previous === undefined) sortedPaths = undefined;
    files.set(path, next);
  };

  return {
    plan: (found) => planReads(files, found),
    read: (paths, found) =>
      forEachLimited(paths, IO_CONCURRENCY, (path) =>
        readChanged(path, found.get(path) as FoundFile),
      ),
    forget(paths) {
      for (const path of paths) files.delete(path);
      if (paths.length > 0) sortedPaths = undefined;
    },
    assemble(leading) {
      sortedPaths ??= [...files.keys()].sort(byCodeUnits);
      return assembleFiles(files, sortedPaths, leading);
    },
  };
}
