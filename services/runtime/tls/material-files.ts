/**
 * The file side of a process's TLS material: which files (`--tls-cert-file`,
 * `--tls-key-file`, each `--trust-domain-bundle`), reading them for one
 * decision, the stat signature that tells a re-stat that one changed, and
 * the directories to watch. Following symlinks, as SPIRE's helper and the
 * SPIFFE CSI drivers swap them.
 */
import { readFile, realpath, stat } from "node:fs/promises";
import { dirname } from "node:path";
import type { FileRead } from "./material-piece.js";
import type { MaterialFiles } from "./tls-material.js";

/** The files of a process's TLS material. */
export interface TlsMaterialPaths {
  /** The certificate chain (PEM: leaf first); with `keyFile`, or neither. */
  readonly certFile?: string;
  /** The certificate's private key (PEM). */
  readonly keyFile?: string;
  /** Trust domain → its bundle file (PEM or SPIFFE bundle). */
  readonly bundleFiles: ReadonlyMap<string, string>;
}

/** Every path of `paths`, certificate and key first. */
export function materialPaths(paths: TlsMaterialPaths): string[] {
  const pair =
    paths.certFile === undefined || paths.keyFile === undefined
      ? []
      : [paths.certFile, paths.keyFile];
  return [...pair, ...paths.bundleFiles.values()];
}

async function readOne(path: string): Promise<FileRead> {
  try {
    return { path, text: await readFile(path, "utf8") };
  } catch (error) {
    const { code, message } = error as NodeJS.ErrnoException;
    return { path, error: code === "ENOENT" ? "no such file" : (code ?? message) };
  }
}

/**
 * Reads every file of `paths` for one decision. Throws an Error when only
 * one of the certificate and key files is given.
 */
export async function readMaterialFiles(paths: TlsMaterialPaths): Promise<MaterialFiles> {
  const { certFile, keyFile } = paths;
  if ((certFile === undefined) !== (keyFile === undefined)) {
    throw new Error("a TLS certificate file needs its key file, and a key file its certificate");
  }
  const bundles = new Map<string, FileRead>();
  for (const [trustDomain, path] of paths.bundleFiles)
    bundles.set(trustDomain, await readOne(path));
  if (certFile === undefined || keyFile === undefined) return { bundles };
  return { identity: { cert: await readOne(certFile), key: await readOne(keyFile) }, bundles };
}

/**
 * A string that changes when any of `paths` changes as `stat` (following
 * symlinks) sees it: device, inode, size, modification and change times, or
 * the error. Equal signatures mean nothing to re-read.
 */
export async function statSignature(paths: readonly string[]): Promise<string> {
  const parts = await Promise.all(
    paths.map(async (path) => {
      try {
        const s = await stat(path);
        return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
      } catch (error) {
        return (error as NodeJS.ErrnoException).code ?? "error";
      }
    }),
  );
  return parts.join("|");
}

/**
 * The directories to watch for `paths`: each path's own directory (where a
 * symlink swap happens) and its target's (where an in-place write happens).
 */
export async function watchedDirectories(paths: readonly string[]): Promise<Set<string>> {
  const directories = new Set<string>();
  for (const path of paths) {
    directories.add(dirname(path));
    try {
      directories.add(dirname(await realpath(path)));
    } catch {
      // A file missing now is found again by the re-stat.
    }
  }
  return directories;
}
