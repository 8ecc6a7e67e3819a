/**
 * One token of the GRPO-TCR loss in float32 steps, as the composed tfjs ops of
 * `computeTokenLossGrpoTcr` (`grpo.ts`) take them: the native kernel of the loss
 * (`native-kernels/grpo-tcr.ts`) and the loss's metrics (`grpoTcrMetrics`) compute with it.
 */

/** Bound of the clamp on the log importance ratio (as verl): `r = exp(clamp(logp - logp_b, -20, 20))`. */
export const LOG_RATIO_CLAMP = 20

const f = Math.fround

/** The clip thresholds of a config as the float32 constants the composed ops compare against. */
export interface ClipConstants {
  /** `1 - eps_low`. */
  low: number
  /** `1 + eps_high`. */
  high: number
  /** The dual clip's `c`. */
  c: number
  /** `-c`. */
  negC: number
}

/** `ClipConstants` of `eps_low`, `eps_high` and `c`, each rounded to float32. */
export function clipConstants(epsLow: number, epsHigh: number, c: number): ClipConstants {
  return { low: f(1 - epsLow), high: f(1 + epsHigh), c: f(c), negC: f(-c) }
}

/**
 * The importance ratio of one token: `d = logp - logp_b`, `logRatio = clamp(d, -20, 20)` and
 * `r = exp(logRatio)`, each rounded to float32 (nats, and a ratio).
 */
export function tokenRatio(logp: number, behavior: number): { d: number; logRatio: number; r: number } {
  const d = f(logp - behavior)
  const logRatio = Math.min(LOG_RATIO_CLAMP, Math.max(-LOG_RATIO_CLAMP, d))
  return { d, logRatio, r: f(Math.exp(logRatio)) }
}

/**
 * One token's GRPO-TCR loss and its derivative in the token's log-probability, with the ties of the
 * composed ops' gradients (a clip passes its bounds; `maximum` sends the gradient to its first
 * operand on a tie, `minimum` likewise): `pg = max(-A r, -A clip(r, 1 - eps_low, 1 + eps_high))`,
 * `L = min(pg, -c A)` for `A < 0`, else `pg` (DemyAgent arXiv 2510.11701; PPO clip, arXiv
 * 1707.06347 eq. 7; dual clip, arXiv 1912.09729 eq. 5).
 */
export function tokenTerms(
  logp: number,
  behavior: number,
  a: number,
  k: ClipConstants,
): { loss: number; dlogp: number } {
  const { d, r } = tokenRatio(logp, behavior)
  const clipped = Math.min(k.high, Math.max(k.low, r))
  const u = f(-f(a * r)) // -A r
  const cl = f(-f(a * clipped)) // -A clip(r)
  const pg = Math.max(u, cl)
  // dpg/dr: -A through the unclipped term, -A inside the clip's bounds through the clipped one
  const dpg = u >= cl || (r >= k.low && r <= k.high) ? -a : 0
  let loss = pg
  let dr = dpg
  if (a < 0) {
    const cap = f(a * k.negC) // -c A
    loss = Math.min(pg, cap)
    dr = pg <= cap ? dpg : 0
  }
  const pass = d >= -LOG_RATIO_CLAMP && d <= LOG_RATIO_CLAMP ? 1 : 0 // the clamp's gradient
  return { loss, dlogp: dr * r * pass }
}
