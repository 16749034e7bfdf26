/**
 * The CRDs of deploy/crds and the example objects of their kinds, read as
 * the files they are (no kubectl needed), and a small walker that checks a
 * value against a CRD's OpenAPI v3 schema, for the CRD tests.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { expect } from "vitest";
import { parseAllDocuments } from "yaml";
import { KUBERNETES_SOURCE_RESOURCES } from "../../services/sources/kubernetes-source.js";

/** The one document of a CRD file under deploy/crds, parsed (throws unless it holds exactly one). */
export async function readCrd<T>(file: string): Promise<T> {
  const docs = parseAllDocuments(await readFile(join("deploy/crds", file), "utf8"));
  if (docs.length !== 1) throw new Error(`${file}: ${docs.length} documents, not 1`);
  return docs[0]?.toJSON() as T;
}

/** Every object of `kind` in the YAML files under `dir`, with the file it is in. */
export async function exampleObjects(
  dir: string,
  kind: string,
): Promise<{ readonly path: string; readonly object: Record<string, unknown> }[]> {
  const found: { path: string; object: Record<string, unknown> }[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !/\.ya?ml$/.test(entry.name)) continue;
    const path = join(entry.parentPath, entry.name);
    for (const doc of parseAllDocuments(await readFile(path, "utf8"))) {
      const object = doc.toJSON() as Record<string, unknown> | null;
      if (object?.kind === kind) found.push({ path, object });
    }
  }
  return found;
}

/** The parts of an OpenAPI v3 schema the walker checks. */
export interface Schema {
  readonly type?: string;
  readonly properties?: Readonly<Record<string, Schema>>;
  readonly items?: Schema;
  readonly required?: readonly string[];
  readonly enum?: readonly unknown[];
  readonly pattern?: string;
  readonly minLength?: number;
  readonly maxLength?: number;
  readonly maxItems?: number;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly "x-kubernetes-preserve-unknown-fields"?: boolean;
  readonly "x-kubernetes-validations"?: readonly { rule: string; message: string }[];
}

/** The problems of `value` against `schema` at `path` (empty: it conforms). */
export function schemaProblems(value: unknown, schema: Schema, path: string): string[] {
  const problems: string[] = [];
  const type = Array.isArray(value)
    ? "array"
    : typeof value === "number"
      ? Number.isInteger(value)
        ? "integer"
        : "number"
      : typeof value;
  if (schema.type !== undefined && schema.type !== type)
    return [`${path}: ${type}, not ${schema.type}`];
  if (schema.enum !== undefined && !schema.enum.includes(value))
    problems.push(`${path}: not in the enum`);
  if (typeof value === "string") {
    if (schema.pattern !== undefined && !new RegExp(schema.pattern).test(value))
      problems.push(`${path}: pattern`);
    if (value.length < (schema.minLength ?? 0) || value.length > (schema.maxLength ?? Infinity))
      problems.push(`${path}: length`);
  }
  if (
    typeof value === "number" &&
    (value < (schema.minimum ?? -Infinity) || value > (schema.maximum ?? Infinity))
  ) {
    problems.push(`${path}: out of range`);
  }
  if (Array.isArray(value)) {
    if (value.length > (schema.maxItems ?? Infinity)) problems.push(`${path}: too many items`);
    value.forEach((item, i) => {
      problems.push(...schemaProblems(item, schema.items ?? {}, `${path}[${i}]`));
    });
  }
  if (type === "object" && value !== null && schema.properties !== undefined) {
    const object = value as Record<string, unknown>;
    for (const key of schema.required ?? [])
      if (!(key in object)) problems.push(`${path}.${key}: required`);
    for (const [key, child] of Object.entries(object)) {
      const sub = schema.properties[key];
      if (sub === undefined) problems.push(`${path}.${key}: unknown field`);
      else problems.push(...schemaProblems(child, sub, `${path}.${key}`));
    }
  }
  return problems;
}

/** The fields of a CRD that say which resource it defines. */
export interface CrdIdentity {
  readonly kind: string;
  readonly metadata: { readonly name: string };
  readonly spec: {
    readonly group: string;
    readonly scope: string;
    readonly names: { readonly plural: string };
    readonly versions: readonly { readonly name: string }[];
  };
}

/**
 * Asserts that `crd` defines the resource of `kind` the Kubernetes source
 * watches: its group, plural, scope (`Namespaced` or `Cluster`), name and
 * one version.
 */
export function expectWatchedResource(crd: CrdIdentity, kind: string, namespaced: boolean): void {
  const watched = KUBERNETES_SOURCE_RESOURCES.find((r) => r.kind === kind);
  expect(crd.kind).toBe("CustomResourceDefinition");
  expect(crd.spec.scope).toBe(namespaced ? "Namespaced" : "Cluster");
  expect(watched).toMatchObject({
    group: crd.spec.group,
    plural: crd.spec.names.plural,
    namespaced,
  });
  expect(crd.metadata.name).toBe(`${crd.spec.names.plural}.${crd.spec.group}`);
  expect(crd.spec.versions.map((v) => v.name)).toEqual([watched?.version]);
}
