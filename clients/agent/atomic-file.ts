/**
 * Crash-safe file replacement for the agent's outputs: a reader sees either
 * the old content or the new one, never a mix, and a write that returned
 * survives a power loss. Writes of one file are serialized and coalesced, so
 * only the latest content of a burst is written.
 */
import { randomBytes } from "node:crypto";
import { open, rename, rm } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/**
 * Replaces `path` with `data` atomically: writes a temporary file in the same
 * directory, fsyncs it, renames it over `path`, then fsyncs the directory so
 * the rename itself is durable. The temporary file is removed when anything
 * fails; the error is rethrown.
 */
export async function writeFileAtomic(path: string, data: string | Uint8Array): Promise<void> {
  const directory = dirname(path);
  const temporary = join(
    directory,
    `.${basename(path)}.tmp-${process.pid}-${randomBytes(4).toString("hex")}`,
  );
  try {
    const file = await open(temporary, "wx", 0o644);
    try {
      await file.writeFile(data);
      await file.sync();
    } finally {
      await file.close();
    }
    await rename(temporary, path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw error;
  }
  const dir = await open(directory, "r");
  try {
    await dir.sync();
  } catch {
    // Some file systems cannot fsync a directory; the rename is still atomic.
  } finally {
    await dir.close();
  }
}

/** A serialized, coalescing writer of one file; see {@link createLatestWriter}. */
export interface LatestWriter {
  /**
   * Schedules `data` to replace the file. While a write is under way, only
   * the latest scheduled content is written after it. Never rejects: failures
   * go to the `onError` callback.
   */
  write(data: string | Uint8Array): void;
  /** Resolves once every scheduled write has finished (or failed). */
  flush(): Promise<void>;
}

/**
 * Creates a writer that replaces `path` atomically ({@link writeFileAtomic})
 * with the latest content scheduled, one write at a time. `onError` is called
 * for every failed write, `onWritten` after every successful one.
 */
export function createLatestWriter(
  path: string,
  callbacks: { onError(error: Error): void; onWritten?(): void },
): LatestWriter {
  let pending: string | Uint8Array | undefined;
  let running: Promise<void> | undefined;

  const drain = async (): Promise<void> => {
    while (pending !== undefined) {
      const data = pending;
      pending = undefined;
      try {
        await writeFileAtomic(path, data);
        callbacks.onWritten?.();
      } catch (error) {
        callbacks.onError(error instanceof Error ? error : new Error(String(error)));
      }
    }
  };

  const kick = () => {
    if (running !== undefined) return;
    running = drain().finally(() => {
      running = undefined;
      // A write scheduled after the loop's last check but before this ran.
      if (pending !== undefined) kick();
    });
  };

  return {
    write(data) {
      pending = data;
      kick();
    },
    async flush() {
      while (running !== undefined) await running;
    },
  };
}
