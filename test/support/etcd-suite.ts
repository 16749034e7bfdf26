/**
 * One real etcd for a whole test file: started before the first test and
 * stopped after the last (even when a test fails), with a raw etcd3 client
 * to inspect it, and a fresh key prefix per test so tests do not see each
 * other's keys.
 */
import { Etcd3 } from "etcd3";
import { afterAll, beforeAll } from "vitest";
import { type EtcdHandle, startEtcd } from "./etcd.js";

/** The shared etcd of a test file; read its fields inside tests and hooks only. */
export interface SharedEtcd {
  /** The running etcd. */
  readonly etcd: EtcdHandle;
  /** A raw client of it (etcd3's high-level API), for assertions. */
  readonly raw: Etcd3;
  /** Returns a key prefix no other test of this process uses, for example `/x123-4/aether/v1`. */
  freshPrefix(): string;
}

/**
 * Registers `beforeAll`/`afterAll` hooks that start and stop one etcd, and
 * returns accessors for it. Call it at the top level of a test file.
 */
export function useSharedEtcd(tag: string): SharedEtcd {
  let etcd: EtcdHandle | undefined;
  let raw: Etcd3 | undefined;
  let counter = 0;
  beforeAll(async () => {
    etcd = await startEtcd();
    raw = new Etcd3({ hosts: etcd.endpoint });
  }, 30_000);
  afterAll(async () => {
    raw?.close();
    await etcd?.stop();
  });
  const started = <T>(value: T | undefined): T => {
    if (value === undefined) throw new Error("the shared etcd is not started yet");
    return value;
  };
  return {
    get etcd() {
      return started(etcd);
    },
    get raw() {
      return started(raw);
    },
    freshPrefix() {
      counter++;
      return `/${tag}${process.pid}-${counter}/aether/v1`;
    },
  };
}
