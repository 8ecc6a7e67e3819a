/**
 * A small seeded pseudo-random generator (sfc32, from PractRand) and a string hash (cyrb53) to
 * derive seeds. Every random choice of a task, an expert or a session table goes through one of
 * these so that the same seed always gives the same episode.
 */

/** Hashes a string to a 32-bit unsigned integer (cyrb53, truncated). Deterministic across runs. */
export function hashSeed(text: string): number {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (h2 ^ h1) >>> 0
}

/** The seeded generator of task instances, experts and session tables (sfc32; not cryptographic). */
export class TaskRng {
  private a: number
  private b: number
  private c: number
  private d: number

  /** @param seed any integer or string; strings are hashed with `hashSeed`. */
  constructor(seed: number | string) {
    const s = typeof seed === 'string' ? hashSeed(seed) : seed >>> 0
    this.a = 0x9e3779b9
    this.b = 0x243f6a88
    this.c = 0xb7e15162
    this.d = s
    for (let i = 0; i < 12; i++) this.next()
  }

  /** A float in [0, 1). */
  next(): number {
    // sfc32: t = a + b + counter; a = b ^ b>>>9; b = c + c<<3; c = rotl(c, 21) + t
    const t = (((this.a + this.b) | 0) + this.d) | 0
    this.d = (this.d + 1) | 0
    this.a = this.b ^ (this.b >>> 9)
    this.b = (this.c + (this.c << 3)) | 0
    this.c = (this.c << 21) | (this.c >>> 11)
    this.c = (this.c + t) | 0
    return (t >>> 0) / 4294967296
  }

  /** An integer in [lo, hi], both inclusive. */
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.next() * (hi - lo + 1))
  }

  /** True with probability `p`. */
  chance(p: number): boolean {
    return this.next() < p
  }

  /** One element of a non-empty array. */
  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick from an empty array')
    return items[Math.floor(this.next() * items.length)]!
  }

  /** A shuffled copy (Fisher-Yates). */
  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items]
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.next() * (i + 1))
      ;[out[i], out[j]] = [out[j]!, out[i]!]
    }
    return out
  }

  /** A 31-bit integer seed for a child generator. */
  seed(): number {
    return Math.floor(this.next() * 2147483647)
  }
}
