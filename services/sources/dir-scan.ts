/**
 * The directory scan of the `dir:PATH` source: which manifest files and
 * directories lie under the root (recursively, symbolic links followed while
 * they stay inside the root, each directory once), with each file's identity,
 * size and times, so that the
 * source re-reads only what changed. A later scan reuses the listings of the
 * directories that did not change, so a change in one directory costs a
 * listing of that directory, not of the whole tree.
 *
 * Hidden files and directories (names starting with `.`, which covers the
 * `..data` and `..TIMESTAMP` entries of a mounted ConfigMap) and editor
 * leftovers (`*~`, `*.swp`, `#name#`) are skipped.
 */
import { lstat, readdir, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, relative as relativePath, sep } from "node:path";
import type { SourceProblem } from "./object-source.js";

/** How many file system calls (stat, read) a scan has in flight at most. */
export const IO_CONCURRENCY = 32;
const MANIFEST_EXTENSIONS = [".yaml", ".yml", ".json"];

/** A manifest file found by a scan. */
export interface FoundFile {
  /** Its absolute path (under the root as given, links not resolved). */
  readonly absolute: string;
  /** Identity, size and times (`dev:inode:size:mtimeMs:ctimeMs`): equal while the file is unchanged. */
  readonly signature: string;
  /** Its size in bytes. */
  readonly size: number;
}

/** True for names the source never reads: hidden entries and editor leftovers. */
export function isIgnoredName(name: string): boolean {
  if (name.startsWith(".") || name.endsWith("~")) return true;
  if (name.startsWith("#") && name.endsWith("#")) return true;
  return /\.sw[a-p]$/.test(name);
}

/** True for the file names the source reads (by extension, case-insensitively). */
function isManifestName(name: string): boolean {
  const lower = name.toLowerCase();
  return !isIgnoredName(name) && MANIFEST_EXTENSIONS.some((ext) => lower.endsWith(ext));
}

/** The error code of a Node.js system error (such as `ENOENT`), if any. */
export function errorCode(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | undefined)?.code;
}

/**
 * Resolves when `root` is an existing directory; otherwise rejects with an
 * error saying that it does not exist or is not a directory (or with the
 * error of `stat` when that fails for another reason).
 */
export async function checkDirectory(root: string): Promise<void> {
  let isDirectory = false;
  try {
    isDirectory = (await stat(root)).isDirectory();
  } catch (error) {
    if (errorCode(error) !== "ENOENT") throw error;
    throw new Error(`the directory ${root} does not exist`);
  }
  if (!isDirectory) throw new Error(`${root} is not a directory`);
}

/** Compares strings by UTF-16 code units, the same on every machine and locale. */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** What a scan found in one directory: its own entries, not its subdirectories'. */
interface DirectoryListing {
  /** The directory's `dev:inode` when it was listed. */
  readonly identity: string;
  /** Its real path (symbolic links resolved). */
  readonly real: string;
  /** Its manifest files, by path relative to the root. */
  readonly files: readonly (readonly [string, FoundFile])[];
  /** Its subdirectories (absolute path, relative path, `dev:inode`), by relative path. */
  readonly subdirectories: readonly (readonly [string, string, string])[];
}

/** What a scan found. */
export interface ScanResult {
  /** The manifest files, by `/`-separated path relative to the root. */
  readonly files: Map<string, FoundFile>;
  /** The directories read (root included), absolute path → `dev:inode`, to watch. */
  readonly directories: Map<string, string>;
  /** Subdirectories that could not be read. */
  readonly problems: SourceProblem[];
  /** Each directory's own listing, by absolute path, for a later scan to reuse. */
  readonly listings: Map<string, DirectoryListing>;
}

/** Options of {@link scanDirectory}. */
export interface ScanOptions {
  /**
   * An earlier scan whose listings are reused for the directories not in
   * `dirty` (and of the same identity); undefined lists every directory.
   */
  readonly previous?: ScanResult;
  /** The directories to list again although `previous` has them. */
  readonly dirty?: ReadonlySet<string>;
  /** Called before a directory is listed (to start watching it first). */
  readonly beforeList?: (directory: string, identity: string) => void;
  /**
   * Follow symbolic links that lead outside the root (default false: such a
   * link is a problem and is not read, so a link cannot make the source read
   * files its operator did not put under the directory).
   */
  readonly linksOutside?: boolean;
}

/** Reports whether the real path `target` is `root` or lies under it. */
export function isInside(root: string, target: string): boolean {
  const path = relativePath(root, target);
  // `..data` (a ConfigMap's) is inside; `..` and `../x` are not.
  return !isAbsolute(path) && path !== ".." && !path.startsWith(`..${sep}`);
}

/** `dev:inode` of a file or directory. */
function identityOf(stats: { readonly dev: number; readonly ino: number }): string {
  return `${stats.dev}:${stats.ino}`;
}

/**
 * Lists the manifest files and the directories under `root` (following
 * symbolic links, each directory once). An unreadable subdirectory is a
 * problem; an unreadable root throws. With `options.previous`, a directory
 * that is not dirty and still has the identity its parent's listing saw is
 * not listed again: its earlier listing is reused, so a change in one
 * directory costs a listing of that directory, not of the whole tree.
 */
export async function scanDirectory(root: string, options: ScanOptions = {}): Promise<ScanResult> {
  const files = new Map<string, FoundFile>();
  const directories = new Map<string, string>();
  const problems: SourceProblem[] = [];
  const listings = new Map<string, DirectoryListing>();
  const visited = new Set<string>();
  const rootReal = await realpath(root);

  const record = (directory: string, listing: DirectoryListing): void => {
    directories.set(directory, listing.identity);
    listings.set(directory, listing);
    for (const [path, file] of listing.files) files.set(path, file);
  };

  const list = async (
    directory: string,
    relative: string,
    identity: string,
  ): Promise<DirectoryListing | undefined> => {
    let entries: string[];
    let real: string;
    try {
      real = await realpath(directory);
      if (visited.has(real)) return undefined;
      visited.add(real);
      options.beforeList?.(directory, identity);
      entries = await readdir(directory);
    } catch (error) {
      if (relative === "") throw error;
      if (errorCode(error) === "ENOENT") return undefined;
      problems.push({
        where: `${relative}/`,
        message: `cannot read directory: ${(error as Error).message}`,
      });
      return undefined;
    }
    const found: [string, FoundFile][] = [];
    const subdirectories: [string, string, string][] = [];
    await forEachLimited(
      entries.filter((name) => !isIgnoredName(name)),
      IO_CONCURRENCY,
      async (name) => {
        const absolute = join(directory, name);
        const path = relative === "" ? name : `${relative}/${name}`;
        let stats: Awaited<ReturnType<typeof stat>>;
        try {
          stats = await lstat(absolute);
          if (stats.isSymbolicLink()) {
            if (options.linksOutside !== true && !isInside(rootReal, await realpath(absolute))) {
              problems.push({
                where: path,
                message:
                  "a symbolic link to a path outside the source directory; it is not followed",
              });
              return;
            }
            stats = await stat(absolute);
          }
        } catch {
          return; // removed meanwhile, or a dangling link (a ConfigMap swap in progress)
        }
        if (stats.isDirectory()) subdirectories.push([absolute, path, identityOf(stats)]);
        else if (stats.isFile() && isManifestName(name)) {
          const signature = `${identityOf(stats)}:${stats.size}:${stats.mtimeMs}:${stats.ctimeMs}`;
          found.push([path, { absolute, signature, size: stats.size }]);
        }
      },
    );
    // Subdirectories in name order, so that of two links to one directory
    // the same one is always the one read.
    subdirectories.sort((a, b) => byCodeUnits(a[1], b[1]));
    return { identity, real, files: found, subdirectories };
  };

  const visit = async (directory: string, relative: string, identity: string): Promise<void> => {
    const earlier = options.previous?.listings.get(directory);
    let listing: DirectoryListing | undefined;
    if (earlier !== undefined && earlier.identity === identity && !options.dirty?.has(directory)) {
      if (visited.has(earlier.real)) return;
      visited.add(earlier.real);
      listing = earlier;
    } else {
      listing = await list(directory, relative, identity);
    }
    if (listing === undefined) return;
    record(directory, listing);
    for (const [absolute, path, subIdentity] of listing.subdirectories) {
      await visit(absolute, path, subIdentity);
    }
  };

  await visit(root, "", identityOf(await stat(root)));
  return { files, directories, problems, listings };
}

/**
 * Calls `task` for every item, with at most `limit` calls in flight; resolves
 * once all have settled, or rejects with the first failure.
 */
export async function forEachLimited<T>(
  items: readonly T[],
  limit: number,
  task: (item: T) => Promise<void>,
): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) await task(items[next++] as T);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}
