import type * as tf from '@tensorflow/tfjs'
import { FusedKernel } from '../fused-kernel-names.ts'
import { type ClipConstants, clipConstants, tokenTerms } from '../grpo-tcr-token.ts'
import type { NativeKernel } from './native-kernel.ts'

/** The clip settings a GRPO-TCR kernel takes as attributes (`GrpoTcrConfig` of `grpo.ts`). */
interface GrpoTcrAttrs {
  epsLow: number
  epsHigh: number
  c: number
}

/** The attributes as the float32 constants the composed ops compare against. */
function constants(attrs: tf.NamedAttrMap | undefined): ClipConstants {
  const { epsLow, epsHigh, c } = attrs as Record<keyof GrpoTcrAttrs, number> // the attributes grpo.ts passes
  return clipConstants(epsLow, epsHigh, c)
}

/**
 * `TriadGrpoTcrTokenLoss`: the per-token GRPO-TCR loss of `logProbs`, `behaviorLogProbs` and
 * `advantages` (float32, one shape, `[batch, seqLen]`), attributes `epsLow`, `epsHigh`, `c`; the
 * output float32 like the inputs (`tokenTerms`). One pass over the tokens in place of a dozen tfjs
 * ops and their saved tensors.
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
