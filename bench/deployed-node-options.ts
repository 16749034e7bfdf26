/**
 * The Node options a process runs with in the shipped manifests, so that
 * what the bench measures of a real process (its RSS above all) is what a
 * deployed one uses: the `NODE_OPTIONS` value of one container of one
 * manifest under deploy/. A manifest that no longer has it fails the bench
 * loudly rather than measuring something else.
 */
import { readFile } from "node:fs/promises";
import { parseAllDocuments } from "yaml";

interface EnvVar {
  readonly name?: unknown;
  readonly value?: unknown;
}
interface Container {
  readonly name?: unknown;
  readonly env?: readonly EnvVar[];
}
interface Workload {
  readonly spec?: { readonly template?: { readonly spec?: { readonly containers?: Container[] } } };
}

/**
 * Returns the `NODE_OPTIONS` value of container `container` in the
 * workload manifest at `path`; throws naming the file when there is none.
 */
export async function deployedNodeOptions(path: string, container: string): Promise<string> {
  const documents = parseAllDocuments(await readFile(path, "utf8"));
  for (const document of documents) {
    const workload = document.toJS() as Workload | null;
    const found = workload?.spec?.template?.spec?.containers?.find((c) => c.name === container);
    const value = found?.env?.find((e) => e.name === "NODE_OPTIONS")?.value;
    if (typeof value === "string") return value;
  }
  throw new Error(`${path}: container ${container} has no NODE_OPTIONS value`);
}
