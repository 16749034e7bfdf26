// The file listing and content hash the build scripts (console-build.mjs,
// test-build.mjs) use to tell whether their inputs changed since a build.
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";

/** Every file under `path` (or `path` itself when it is a file), relative to `root`, sorted; none when missing. */
export function filesUnder(root, path) {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  if (statSync(full).isFile()) return [path];
  return readdirSync(full, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile())
    .map((entry) => relative(root, join(entry.parentPath ?? entry.path, entry.name)))
    .sort();
}

/** The SHA-256 (hex) over each file's path and contents, in order (`files` relative to `root`). */
export function hashFiles(root, files) {
  const hash = createHash("sha256");
  for (const file of files) {
    hash.update(`${file}\0`);
    hash.update(readFileSync(join(root, file)));
  }
  return hash.digest("hex");
}
