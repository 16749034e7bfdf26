/**
 * The store access monitor over a fake store whose `checkAccess` answers
 * what the test says: a denial is reported (with write asked only when the
 * registrar writes) and cleared once access is granted again, and a store
 * that cannot be asked changes nothing. The real check against etcd's RBAC
 * is in test/integration/etcd-rbac.test.ts.
 */
import { afterEach, describe, expect, it } from "vitest";
import {
  type AccessMonitor,
  createAccessMonitor,
} from "../../services/registrar/store/access-monitor.js";
import {
  type ConfigStore,
  StorePermissionError,
  StoreUnavailableError,
} from "../../services/registrar/store/config-store.js";
import { waitFor } from "../support/wait.js";

const monitors: AccessMonitor[] = [];
afterEach(async () => {
  await Promise.all(monitors.splice(0).map((m) => m.stop()));
});

/** A store whose checkAccess throws `answer.error` (or resolves), recording what it was asked. */
function fakeStore(answer: { error?: Error }, asked: boolean[]): ConfigStore {
  return {
    checkAccess: async ({ write }: { write: boolean }) => {
      asked.push(write);
      if (answer.error !== undefined) throw answer.error;
    },
  } as unknown as ConfigStore;
}

function monitor(store: ConfigStore, write: boolean): AccessMonitor {
  const created = createAccessMonitor({ store, write, okIntervalMs: 10, deniedIntervalMs: 10 });
  monitors.push(created);
  created.start();
  return created;
}

describe("store access monitor", () => {
  it("reports a denial, and clears it once access is granted again", async () => {
    const answer: { error?: Error } = { error: new StorePermissionError("permission denied: x") };
    const asked: boolean[] = [];
    const m = monitor(fakeStore(answer, asked), true);
    await waitFor(() => m.denied !== undefined);
    expect(m.denied).toBe("permission denied: x");
    delete answer.error;
    await waitFor(() => m.denied === undefined);
    expect(asked.every((write) => write)).toBe(true);
  });

  it.each([true, false])(
    "asks for write access only when the registrar writes (%s)",
    async (write) => {
      const asked: boolean[] = [];
      monitor(fakeStore({}, asked), write);
      await waitFor(() => asked.length >= 2);
      expect(new Set(asked)).toEqual(new Set([write]));
    },
  );

  it("keeps the last finding while the store cannot be asked", async () => {
    const answer: { error?: Error } = { error: new StorePermissionError("permission denied: y") };
    const asked: boolean[] = [];
    const m = monitor(fakeStore(answer, asked), false);
    await waitFor(() => m.denied !== undefined);
    answer.error = new StoreUnavailableError("etcd is away");
    const before = asked.length;
    await waitFor(() => asked.length >= before + 3);
    expect(m.denied).toBe("permission denied: y");
  });

  it("is never denied on a store without access control", async () => {
    const m = monitor({} as ConfigStore, true);
    expect(m.denied).toBeUndefined();
    await m.stop();
    expect(m.denied).toBeUndefined();
  });
});
