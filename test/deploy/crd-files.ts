/**
 * The CRDs of deploy/crds and the example objects of their kinds, read as
 * the files they are (no kubectl needed), for the CRD tests.
 */
import { readdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { parseAllDocuments } from "yaml";

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
