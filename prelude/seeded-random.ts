/**
 * mulberry32: a tiny, fast 32-bit PRNG. Not cryptographic; it exists so that `Math.random` in a
 * script gives the same sequence for the same seed, which replay needs.
 * @module
 */

/** A `Math.random` replacement seeded with `seed` (any number; only its low 32 bits count). */
export function createSeededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return function random(): number {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
