/**
 * The first read of the TLS files (what a starting registrar or agent and
 * aetherctl's one-shot read do) over real files, with an injected clock and
 * timers: a mismatched pair is read again once per settle, exactly
 * `retries` times, and then refused with its reason; a pair made whole
 * between two reads is taken without a refusal.
 */
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadTlsMaterial, type MaterialTimers } from "../../services/runtime/tls/material-read.js";
import type { SettlePolicy } from "../../services/runtime/tls/material-settle.js";
import { createSpiffePki, type SpiffePki } from "../support/test-spiffe-pki.js";
import { waitFor } from "../support/wait.js";

const POLICY: SettlePolicy = { settleMs: 300, retries: 3 };

let dir: string;
let pki: SpiffePki;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "aether-material-read-"));
  pki = await createSpiffePki(dir);
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A clock that moves only when a timer is fired, and the timers waiting on it. */
function manualTimers() {
  let clock = 1_000;
  const pending: { at: number; callback: () => void }[] = [];
  const waits: number[] = [];
  const timers: MaterialTimers = {
    now: () => clock,
    setTimeout: (callback, ms) => {
      waits.push(ms);
      const timer = { at: clock + ms, callback };
      pending.push(timer);
      return timer;
    },
    clearTimeout: (handle) => pending.splice(pending.indexOf(handle as never), 1),
    setInterval: () => undefined,
    clearInterval: () => {},
  };
  /** Waits for the read to set a timer, moves the clock to it and fires it. */
  const fireNext = async () => {
    await waitFor(() => pending.length > 0, 5_000, "a settle timer");
    const timer = pending.shift() as { at: number; callback: () => void };
    clock = timer.at;
    timer.callback();
  };
  return { timers, waits, fireNext };
}

describe("the first read of the TLS files", () => {
  it("reads a mismatched pair again once per settle, `retries` times, then refuses it", async () => {
    const { timers, waits, fireNext } = manualTimers();
    const files = { certFile: pki.server.cert, keyFile: pki.client.key, bundleFiles: new Map() };
    const reading = loadTlsMaterial({ ...files, settle: POLICY, timers });
    const outcome = reading.then(
      () => "taken",
      (error: Error) => error.message,
    );
    for (let retry = 0; retry < POLICY.retries; retry++) await fireNext();
    expect(await outcome).toMatch(/^TLS material refused: .* is not the key of /);
    expect(waits).toEqual(Array(POLICY.retries).fill(POLICY.settleMs));
  });

  it("takes a pair made whole between two reads, without a refusal", async () => {
    const { timers, waits, fireNext } = manualTimers();
    const key = join(dir, "rotating.key");
    await copyFile(pki.client.key, key); // not the server's key yet
    const reading = loadTlsMaterial({
      certFile: pki.server.cert,
      keyFile: key,
      bundleFiles: new Map(),
      settle: POLICY,
      timers,
    });
    await waitFor(() => waits.length === 1, 5_000, "the first read to be found inconsistent");
    await copyFile(pki.server.key, key);
    // The key changed since: its quiet time starts over, then the whole pair is read.
    await fireNext();
    await fireNext();
    expect((await reading).identity?.serial).toBe(pki.server.serial);
    expect(waits).toEqual([POLICY.settleMs, POLICY.settleMs]);
  });
});
