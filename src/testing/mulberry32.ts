/**
 * mulberry32 (Tommy Ettinger, 2017; public domain): a 32-bit seeded generator with a 2^32
 * period, for reproducible draws in tests, benchmarks and simulations. Not for anything an
 * attacker may predict, and not part of the public API (`grudge/testing` does not export it):
 * the one copy our tests, benches and scripts import.
 * @internal
 * @module
 */

/**
 * A generator of uniform 32-bit unsigned integers in [0, 2^32).
 * @param seed any number; its low 32 bits pick the sequence
 * @internal
 */
export function mulberry32Uint32(seed: number): () => number {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return (t ^ (t >>> 14)) >>> 0
  }
}

/**
 * A generator of uniform numbers in [0, 1): {@link mulberry32Uint32} / 2^32.
 * @param seed any number; its low 32 bits pick the sequence
 * @internal
 */
export function mulberry32(seed: number): () => number {
  const next = mulberry32Uint32(seed)
  return () => next() / 4294967296
}
