/**
 * Parses one manifest file of a directory source: multi-document YAML (JSON
 * is YAML too), `List` kinds expanded, every object checked to have the
 * fields the sources and the projector key on. Pure, no I/O.
 *
 * The `yaml` library is the reference: it reports errors with positions and
 * keeps the line of every node. It is also slow (about a millisecond per
 * small file), too slow for a directory of thousands of services, so a clean
 * file is first read with `js-yaml` (about ten times faster), with a schema
 * that resolves plain scalars exactly as the `yaml` library's YAML 1.2 core
 * schema does. Whenever that fast read is not certain to give the same
 * objects and lines (an error, a problem, a List, an anchor shared by two
 * nodes, a directive, a `null` map key, documents it cannot line up), the
 * file is parsed again with the `yaml` library, which decides; a test checks
 * that both give the same result.
 */
import { Schema as FastSchema, Type as FastType, loadAll as fastLoadAll } from "js-yaml";
import { type Document, isSeq, LineCounter, parseAllDocuments } from "yaml";
import type { KubeObject } from "../common/kube-object.js";
import type { SourceProblem } from "./object-source.js";

/** An object read from a manifest, with the line it starts on (1-based). */
export interface ParsedObject {
  /** The object, as plain JSON. */
  readonly object: KubeObject;
  /** The line of the file the object starts on. */
  readonly line: number;
}

/** What {@link parseManifest} found in one file. */
export interface ParsedManifest {
  /** The objects, in document order (a List's items in place of the List). */
  readonly objects: readonly ParsedObject[];
  /** Everything wrong with the file; when not empty, the objects are not to be used. */
  readonly problems: readonly SourceProblem[];
}

/** The largest number of problems reported for one file (the first ones, by line). */
const MAX_PROBLEMS_PER_FILE = 10;

/** A plain JSON object (not an array, not null). */
function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/**
 * Describes a value for a message by its type only: problems are logged and
 * served (GetConfigStatus), and a file in the wrong place may hold secrets,
 * so no message ever quotes a file's content.
 */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  return `a ${typeof value}`;
}

/** Returns why `value` is not a usable Kubernetes object, or undefined when it is. */
function objectShapeError(value: unknown): string | undefined {
  if (!isRecord(value)) return `is ${describe(value)}, not a Kubernetes object`;
  for (const field of ["apiVersion", "kind"] as const) {
    const text = value[field];
    if (typeof text !== "string" || text === "") return `has no ${field}`;
  }
  const metadata = value.metadata;
  if (!isRecord(metadata)) return `${value.kind} has no metadata`;
  if (typeof metadata.name !== "string" || metadata.name === "") {
    return `${value.kind} has no metadata.name`;
  }
  const namespace = metadata.namespace;
  if (namespace !== undefined && (typeof namespace !== "string" || namespace === "")) {
    return `${value.kind} ${metadata.name} has a metadata.namespace that is not a non-empty string`;
  }
  return undefined;
}

/** True for `kind: List` and typed lists such as `ServiceList` that carry `items`. */
function isList(value: Record<string, unknown>): boolean {
  const kind = value.kind;
  if (typeof kind !== "string" || !Array.isArray(value.items)) return false;
  return kind === "List" || (kind.endsWith("List") && kind.length > 4);
}

/** The message of a YAML error without the position and excerpt the library appends. */
function yamlMessage(message: string, column: number | undefined): string {
  const cut = message.search(/ at line \d+, column \d+/);
  const text = (cut < 0 ? message.split("\n")[0] : message.slice(0, cut)) ?? message;
  return column === undefined ? text : `${text} (column ${column})`;
}

/**
 * Parses the text of one manifest file; `file` (the path relative to the
 * source's directory) names it in problems as `file:line`. Empty documents
 * are skipped; `kind: List` (and typed lists such as `ServiceList`) are
 * replaced by their items, which inherit the list's apiVersion and item
 * kind when they lack them. A YAML error, a document that is not an object,
 * or an object without apiVersion, kind or metadata.name is a problem; the
 * caller keeps the file's previous objects while there are any.
 */
export function parseManifest(text: string, file: string): ParsedManifest {
  return parseCleanManifest(text) ?? parseManifestThoroughly(text, file);
}

/**
 * The plain scalars of the YAML 1.2 core schema, resolved exactly as the
 * `yaml` library's core schema resolves them (its own regular expressions),
 * for js-yaml. Quoted scalars stay strings in both.
 */
const CORE_SCALARS: readonly FastType[] = [
  new FastType("tag:yaml.org,2002:null", {
    kind: "scalar",
    resolve: (data: string | null) => data === null || /^(?:~|[Nn]ull|NULL)?$/.test(data),
    construct: () => null,
  }),
  new FastType("tag:yaml.org,2002:bool", {
    kind: "scalar",
    resolve: (data: string | null) =>
      data !== null && /^(?:[Tt]rue|TRUE|[Ff]alse|FALSE)$/.test(data),
    construct: (data: string) => data[0] === "t" || data[0] === "T",
  }),
  new FastType("tag:yaml.org,2002:int", {
    kind: "scalar",
    resolve: (data: string | null) =>
      data !== null &&
      (/^0o[0-7]+$/.test(data) || /^[-+]?[0-9]+$/.test(data) || /^0x[0-9a-fA-F]+$/.test(data)),
    construct: (data: string) =>
      data.startsWith("0o")
        ? Number.parseInt(data.slice(2), 8)
        : data.startsWith("0x")
          ? Number.parseInt(data.slice(2), 16)
          : Number.parseInt(data, 10),
  }),
  new FastType("tag:yaml.org,2002:float", {
    kind: "scalar",
    resolve: (data: string | null) =>
      data !== null &&
      (/^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/.test(data) ||
        /^[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)[eE][-+]?[0-9]+$/.test(data) ||
        /^[-+]?(?:\.[0-9]+|[0-9]+\.[0-9]*)$/.test(data)),
    construct: (data: string) => {
      if (/nan$/i.test(data)) return Number.NaN;
      if (/inf$/i.test(data)) return data[0] === "-" ? -Infinity : Infinity;
      return Number.parseFloat(data);
    },
  }),
];

/** js-yaml's failsafe schema (strings, sequences, maps) plus the core scalars. */
const FAST_SCHEMA = new FastSchema({ implicit: [...CORE_SCALARS] });

/**
 * Reads a file that is clean (no error, no problem, no List) with js-yaml and
 * returns what {@link parseManifestThoroughly} would return for it, or
 * undefined when it cannot be sure of that. {@link parseManifest} tries this
 * first.
 */
export function parseCleanManifest(text: string): ParsedManifest | undefined {
  const lines = documentLines(text);
  if (lines === undefined) return undefined;
  let values: unknown[];
  try {
    values = fastLoadAll(text, null, { schema: FAST_SCHEMA }) as unknown[];
  } catch {
    return undefined;
  }
  if (values.length !== lines.length) return undefined;
  const objects: ParsedObject[] = [];
  for (const [index, value] of values.entries()) {
    if (value === null || value === undefined) continue;
    if (objectShapeError(value) !== undefined || isList(value as Record<string, unknown>)) {
      return undefined;
    }
    if (!isPlainTree(value)) return undefined;
    objects.push({ object: value as KubeObject, line: lines[index] as number });
  }
  return { objects, problems: [] };
}

/**
 * Reports whether `root` is a tree of plain values: no object reached twice
 * (an alias of a collection, which the `yaml` library copies and counts) and
 * no `null` map key (which the two libraries name differently).
 */
function isPlainTree(root: unknown): boolean {
  const seen = new Set<object>();
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const value = stack.pop();
    if (typeof value !== "object" || value === null) continue;
    if (seen.has(value)) return false;
    seen.add(value);
    if (Array.isArray(value)) {
      // One push per item: spreading a list of a hundred thousand items as
      // arguments overflows the call stack.
      for (const item of value) stack.push(item);
      continue;
    }
    for (const key of Object.keys(value)) {
      if (key === "null") return false;
      stack.push((value as Record<string, unknown>)[key]);
    }
  }
  return true;
}

/**
 * Returns, for every document of a YAML stream, the line (1-based) its content
 * starts on: the first line that is neither blank nor a comment, on or after
 * its `---` (the `---` line itself when content follows it there), or 0 for
 * an empty document. Returns undefined for what this simple reading does not
 * handle: directives (`%`), document end markers (`...`), and tabs before
 * content.
 */
function documentLines(text: string): number[] | undefined {
  const lines = text.split("\n");
  const documents: number[] = [];
  let current: number | undefined; // index in `documents` of the open document
  for (const [i, raw] of lines.entries()) {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (line.startsWith("%") || line.startsWith("...")) return undefined;
    if (/^---(?:[ \t]|$)/.test(line)) {
      documents.push(0);
      current = documents.length - 1;
      const rest = line.slice(3).trim();
      if (rest !== "" && !rest.startsWith("#")) documents[current] = i + 1;
      continue;
    }
    const content = line.trimStart();
    if (content === "" || content.startsWith("#")) continue;
    if (current === undefined) {
      documents.push(0);
      current = 0;
    }
    if (documents[current] === 0) {
      if (line.startsWith("\t")) return undefined;
      documents[current] = i + 1;
    }
  }
  return documents;
}

/**
 * Parses a manifest with the `yaml` library: the reference for what
 * {@link parseManifest} returns, with positions for every problem.
 */
export function parseManifestThoroughly(text: string, file: string): ParsedManifest {
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, {
    lineCounter,
    prettyErrors: false,
    // The library's warnings go to process.emitWarning and quote the content.
    logLevel: "error",
  });
  const objects: ParsedObject[] = [];
  const problems: SourceProblem[] = [];
  const lineOf = (offset: number) => lineCounter.linePos(offset).line;
  const problem = (line: number, message: string) => {
    problems.push({ where: `${file}:${line}`, message });
  };

  documents.forEach((document: Document.Parsed, index) => {
    const docLine = lineOf(document.contents?.range[0] ?? document.range[0]);
    const error = document.errors[0];
    if (error !== undefined) {
      const pos = lineCounter.linePos(error.pos[0]);
      problem(pos.line, `YAML error: ${yamlMessage(error.message, pos.col)}`);
      return;
    }
    let value: unknown;
    try {
      value = document.toJS({ maxAliasCount: 100 });
    } catch (cause) {
      problem(docLine, `document ${index + 1} cannot be read: ${(cause as Error).message}`);
      return;
    }
    if (value === null || value === undefined) return;
    if (isRecord(value) && isList(value)) {
      const itemNodes = document.getIn(["items"], true);
      const nodes = isSeq(itemNodes) ? itemNodes.items : [];
      const listKind = (value.kind as string) === "List" ? undefined : (value.kind as string);
      (value.items as unknown[]).forEach((item, i) => {
        const node = nodes[i] as { range?: [number, number, number] } | undefined;
        const line = node?.range === undefined ? docLine : lineOf(node.range[0]);
        const filled =
          isRecord(item) && listKind !== undefined
            ? {
                apiVersion: value.apiVersion,
                kind: listKind.slice(0, -"List".length),
                ...item,
              }
            : item;
        const shape = objectShapeError(filled);
        if (shape !== undefined) problem(line, `item ${i + 1} of the ${value.kind} ${shape}`);
        else objects.push({ object: filled as KubeObject, line });
      });
      return;
    }
    const shape = objectShapeError(value);
    if (shape !== undefined) problem(docLine, `document ${index + 1} ${shape}`);
    else objects.push({ object: value as KubeObject, line: docLine });
  });

  return { objects, problems: problems.slice(0, MAX_PROBLEMS_PER_FILE) };
}
