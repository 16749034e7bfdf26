/**
 * mulberry32, a small seedable pseudo-random generator: reproducible for a
 * seed and spread evenly over [0, 1). For decisions that must repeat
 * (`aetherctl explain --seed-random`, the conformance runs, the benchmark's
 * scenario), never for anything secret. Pure.
 */

/** Returns the mulberry32 sequence of `seed` (taken as a 32-bit unsigned integer). */
export function mulberry32(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}
