/**
 * Seeded pseudo-random numbers for weight initialisation, sampling and data order: a 32-bit
 * SplitMix-style generator (mulberry32), identical on every backend and platform.
 */

/** A seeded random source. */
export interface Rng {
  /** Uniform in [0, 1). */
  next(): number
  /** Standard normal (Box-Muller). */
  normal(): number
  /** Uniform integer in [0, n). */
  int(n: number): number
}

/** A generator seeded by an integer (any 32 bits of it are used). */
export function createRng(seed: number): Rng {
  let state = seed >>> 0
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
  return {
    next,
    normal() {
      const u = 1 - next() // (0, 1]
      const v = next()
      return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v)
    },
    int(n: number) {
      return Math.floor(next() * n)
    },
  }
}

/** In-place seeded Fisher-Yates shuffle; returns `items`. */
export function shuffle<T>(items: T[], rng: Rng): T[] {
  for (let i = items.length - 1; i > 0; i--) {
    const j = rng.int(i + 1)
    const tmp = items[i]!
    items[i] = items[j]!
    items[j] = tmp
  }
  return items
}
