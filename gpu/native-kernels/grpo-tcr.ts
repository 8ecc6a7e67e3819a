import type * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import type { NativeKernel } from './native-kernel.ts'

/** The clip settings a GRPO-TCR kernel takes as attributes (`GrpoTcrConfig` of `grpo.ts`). */
interface GrpoTcrAttrs {
  epsLow: number
  epsHigh: number
  c: number
}

const f = Math.fround

/**
 * One token of the GRPO-TCR loss and its derivative in the token's log-probability, in float32
 * steps as the composed tfjs ops of `computeTokenLossGrpoTcr` take them, with their gradients' ties
 * (a clip passes its bounds; `maximum` sends the gradient to its first operand on a tie, `minimum`
 * likewise): `r = exp(clamp(logp - logp_b, -20, 20))`, `pg = max(-A r, -A clip(r, 1 - eps_low,
 * 1 + eps_high))`, `L = min(pg, -c A)` for `A < 0`, else `pg` (DemyAgent arXiv 2510.11701; PPO
 * clip, arXiv 1707.06347 eq. 7; dual clip, arXiv 1912.09729 eq. 5).
 */
function tokenTerms(
  logp: number,
  behavior: number,
  a: number,
  k: { low: number; high: number; negC: number },
): { loss: number; dlogp: number } {
  const d = f(logp - behavior)
  const logRatio = Math.min(20, Math.max(-20, d))
  const r = f(Math.exp(logRatio))
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
  const pass = d >= -20 && d <= 20 ? 1 : 0 // the log-ratio clamp's gradient
  return { loss, dlogp: dr * r * pass }
}

/** The attributes as the float32 constants the composed ops compare against. */
function constants(attrs: tf.NamedAttrMap | undefined) {
  const { epsLow, epsHigh, c } = attrs as Record<keyof GrpoTcrAttrs, number> // the attributes grpo.ts passes
  return { low: f(1 - epsLow), high: f(1 + epsHigh), negC: f(-c) }
}

/**
 * `TriadGrpoTcrTokenLoss`: the per-token GRPO-TCR loss of `logProbs`, `behaviorLogProbs` and
 * `advantages` (float32, one shape, `[batch, seqLen]`), attributes `epsLow`, `epsHigh`, `c`; the
 * output float32 like the inputs. One pass over the tokens in place of a dozen tfjs ops and their
 * saved tensors.
 */
export const grpoTcrTokenLossKernel: NativeKernel = {
  kernelName: FusedKernel.GrpoTcrTokenLoss,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { logProbs, behaviorLogProbs, advantages } = inputs as Record<string, tf.TensorInfo>
    const lp = backend.values(logProbs!) as Float32Array
    const b = backend.values(behaviorLogProbs!) as Float32Array
    const a = backend.values(advantages!) as Float32Array
    const k = constants(attrs)
    const out = backend.allocate('float32', lp.length) as Float32Array
    for (let i = 0; i < lp.length; i++) out[i] = tokenTerms(lp[i]!, b[i]!, a[i]!, k).loss
    return backend.output(out, logProbs!.shape, 'float32')
  },
}

/** `TriadGrpoTcrTokenLossGrad`: `dlogp = dy dL/dlogp` for the inputs of the loss above and `dy` of its shape. */
export const grpoTcrTokenLossGradKernel: NativeKernel = {
  kernelName: FusedKernel.GrpoTcrTokenLossGrad,
  kernelFunc: ({ inputs, backend, attrs }) => {
    const { dy, logProbs, behaviorLogProbs, advantages } = inputs as Record<string, tf.TensorInfo>
    const g = backend.values(dy!) as Float32Array
    const lp = backend.values(logProbs!) as Float32Array
    const b = backend.values(behaviorLogProbs!) as Float32Array
    const a = backend.values(advantages!) as Float32Array
    const k = constants(attrs)
    const out = backend.allocate('float32', lp.length) as Float32Array
    for (let i = 0; i < lp.length; i++) out[i] = g[i]! * tokenTerms(lp[i]!, b[i]!, a[i]!, k).dlogp
    return backend.output(out, logProbs!.shape, 'float32')
  },
}
