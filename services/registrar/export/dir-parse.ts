/**
 * Parses one manifest file of a directory source: multi-document YAML (JSON
 * is YAML too), `List` kinds expanded, every object checked to have the
 * fields the sources and the projector key on. Pure, no I/O.
 */
import { type Document, isSeq, LineCounter, parseAllDocuments } from "yaml";
import type { KubeObject } from "../../common/kube-object.js";
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

/** Describes a value for a message: its type, or its text when a short scalar. */
function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "a list";
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
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
  const lineCounter = new LineCounter();
  const documents = parseAllDocuments(text, { lineCounter, prettyErrors: false });
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
