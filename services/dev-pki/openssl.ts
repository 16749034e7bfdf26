/**
 * The `openssl` command line for whoever makes throwaway certificates (the
 * tests: etcd over TLS, SPIFFE identities; the sandbox's mutual TLS): the
 * binary, a check that it is installed, and a runner whose error carries
 * openssl's standard error.
 */
import { execFile } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { promisify } from "node:util";

const run = promisify(execFile);

/** The `openssl` binary; `$OPENSSL_BIN` or `/usr/bin/openssl`. */
export const OPENSSL = process.env.OPENSSL_BIN ?? "/usr/bin/openssl";

/** Throws an Error saying what to install when `binary` is not an executable. */
export function requireBinary(binary: string, what: string): void {
  try {
    accessSync(binary, constants.X_OK);
  } catch {
    throw new Error(`${binary} not found; install it with \`apt-get install -y ${what}\``);
  }
}

/** Runs `openssl ...args`; rejects with an Error holding openssl's standard error. */
export async function openssl(args: readonly string[]): Promise<void> {
  requireBinary(OPENSSL, "openssl");
  try {
    await run(OPENSSL, [...args]);
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr ?? "";
    throw new Error(`openssl ${args[0]} failed: ${(error as Error).message}\n${stderr}`, {
      cause: error,
    });
  }
}
