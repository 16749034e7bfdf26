/**
 * The in-process figures of the signing benchmark: what signing and
 * verifying one typical stored projection costs on this machine with
 * Node's `crypto` (Ed25519), outside any process, socket or store, as a
 * floor to compare the per-projection cost of the real processes with.
 * Sign is `signStoredValue` (split the value, sign its bytes, append the
 * record); verify is what an importer does with a stored value
 * (`splitStoredValue`, then the signature check over the origin's keys).
 */
import { splitStoredValue } from "../../services/common/projection-signature.js";
import { createOriginKeysCheck } from "../../services/signing/origin-keys-source.js";
import type { SigningKey } from "../../services/signing/signing-key.js";
import { signStoredValue } from "../../services/signing/signing-key.js";
import { originKeysOf } from "../../test/support/signing-keys.js";

/** The in-process cost of one sign and one verify, in µs each (mean over `iterations`). */
export interface MicroFigures {
  readonly iterations: number;
  /** The unsigned stored value's size, in bytes. */
  readonly valueBytes: number;
  readonly signUs: number;
  readonly verifyUs: number;
}

const WARM_UP = 200;

/** Mean µs per call of `run` over `iterations`, after a warm-up. */
function timePerCall(iterations: number, run: () => void): number {
  for (let i = 0; i < WARM_UP; i++) run();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) run();
  const ns = Number(process.hrtime.bigint() - t0);
  return Math.round((ns / iterations / 1_000) * 10) / 10;
}

/**
 * Signs `value` (an unsigned stored projection of `origin`) with `key`, and
 * verifies the result, `iterations` times each. Throws when the signed
 * value does not verify (the figures would be of a failing path).
 */
export function measureMicro(
  value: Uint8Array,
  origin: string,
  key: SigningKey,
  iterations: number,
): MicroFigures {
  const keys = originKeysOf({ [origin]: [key] });
  const check = createOriginKeysCheck(() => keys, true);
  const signed = signStoredValue(value, origin, key);
  const verdict = check.judge(origin, "bench", splitStoredValue(signed));
  if (verdict.kind !== "verified") {
    throw new Error(`the micro figure's signed value did not verify: ${verdict.kind}`);
  }
  let sink = 0;
  const signUs = timePerCall(iterations, () => {
    sink += signStoredValue(value, origin, key).length;
  });
  const verifyUs = timePerCall(iterations, () => {
    if (check.judge(origin, "bench", splitStoredValue(signed)).kind === "verified") sink++;
  });
  if (sink === 0) throw new Error("unreachable: nothing was signed");
  return { iterations, valueBytes: value.length, signUs, verifyUs };
}
