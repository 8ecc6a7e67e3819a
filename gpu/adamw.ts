import * as tf from '@tensorflow/tfjs'
import { ConfigError, ShapeError } from './errors.ts'
import { globalNorm } from './gradients.ts'
import { nativeAdamW } from './native-kernels/adamw.ts'

/** Settings of `AdamW`. */
export interface AdamWConfig {
  /** First-moment decay; default 0.9. */
  beta1?: number
  /** Second-moment decay; default 0.95. */
  beta2?: number
  /** Denominator epsilon; default 1e-8. */
  eps?: number
  /** Decoupled weight decay coefficient; default 0.01. */
  weightDecay?: number
  /**
   * Clip the global gradient L2 norm to this; default 1.0 (docs/design.md#algorithms); `Infinity`
   * for none.
   */
  gradClip?: number
  /** Whether a parameter is decayed; default every parameter of rank >= 2 (not norms). */
  decay?: (name: string, variable: tf.Variable) => boolean
}

/**
 * The settings `AdamW` takes when its config leaves them out (docs/design.md#algorithms: global
 * grad-norm clip 1.0).
 */
export const ADAMW_DEFAULTS = Object.freeze({
  beta1: 0.9,
  beta2: 0.95,
  eps: 1e-8,
  weightDecay: 0.01,
  gradClip: 1,
} as const)

/** What one `AdamW.step` did. */
export interface AdamWStepInfo {
  /** Global L2 norm of the gradients before clipping. */
  gradNorm: number
  /** Factor the gradients were multiplied by (1 when not clipped). */
  clipScale: number
  /** Learning rate used. */
  lr: number
  /** Steps taken so far, this one included. */
  step: number
}

/**
 * AdamW (Loshchilov & Hutter 2019, Algorithm 2, with the learning rate multiplying the decay as in
 * PyTorch) with global gradient-norm clipping (Pascanu et al. 2013, eq. 7). Moments are float32
 * tensors per parameter.
 */
export class AdamW {
  readonly beta1: number
  readonly beta2: number
  readonly eps: number
  readonly weightDecay: number
  readonly gradClip: number
  /** Steps taken. */
  stepCount = 0
  private readonly params: ReadonlyMap<string, tf.Variable>
  private readonly decayed: ReadonlySet<string>
  private readonly m = new Map<string, tf.Variable>()
  private readonly v = new Map<string, tf.Variable>()

  /** @param params the model's parameters by name (`model.params`). @throws ConfigError on bad settings. */
  constructor(params: ReadonlyMap<string, tf.Variable>, config: AdamWConfig = {}) {
    this.beta1 = config.beta1 ?? ADAMW_DEFAULTS.beta1
    this.beta2 = config.beta2 ?? ADAMW_DEFAULTS.beta2
    this.eps = config.eps ?? ADAMW_DEFAULTS.eps
    this.weightDecay = config.weightDecay ?? ADAMW_DEFAULTS.weightDecay
    this.gradClip = config.gradClip ?? ADAMW_DEFAULTS.gradClip
    for (const [field, value] of [
      ['beta1', this.beta1],
      ['beta2', this.beta2],
    ] as const)
      if (!(value >= 0 && value < 1)) throw new ConfigError(field, value, 'must be in [0, 1)')
    if (!(this.eps > 0)) throw new ConfigError('eps', this.eps, 'must be > 0')
    if (!(this.weightDecay >= 0)) throw new ConfigError('weightDecay', this.weightDecay, 'must be >= 0')
    if (!(this.gradClip > 0)) throw new ConfigError('gradClip', this.gradClip, 'must be > 0')
    this.params = params
    const decay = config.decay ?? ((_name: string, variable: tf.Variable) => variable.rank >= 2)
    this.decayed = new Set(
      [...params].filter(([name, variable]) => decay(name, variable)).map(([name]) => name),
    )
    for (const [name, p] of params) {
      this.m.set(name, tf.variable(tf.zerosLike(p), false))
      this.v.set(name, tf.variable(tf.zerosLike(p), false))
    }
  }

  /**
   * One update with learning rate `lr` from gradients keyed by parameter name (same shapes as the
   * parameters; a missing gradient counts as zero). Does not dispose the gradients.
   * @param knownNorm the gradients' global L2 norm where the caller already computed it
   *   (`globalNorm`); computed here otherwise.
   * @throws ShapeError when a gradient's shape differs from its parameter's.
   */
  async step(
    grads: Readonly<Record<string, tf.Tensor>>,
    lr: number,
    knownNorm?: number,
  ): Promise<AdamWStepInfo> {
    if (!(lr >= 0)) throw new ConfigError('lr', lr, 'must be >= 0')
    for (const [name, g] of Object.entries(grads)) {
      const p = this.params.get(name)
      if (!p) throw new ShapeError(`grads.${name}`, 'a gradient of a known parameter', g.shape)
      if (!tf.util.arraysEqual(p.shape, g.shape))
        throw new ShapeError(`grads.${name}`, `[${p.shape}]`, g.shape)
    }
    const gradNorm = knownNorm ?? (await globalNorm(Object.values(grads))) // ||g||_2 over all parameters
    if (!Number.isFinite(gradNorm)) throw new ConfigError('grads', gradNorm, 'gradient norm is not finite')
    const clipScale = gradNorm > this.gradClip ? this.gradClip / (gradNorm + 1e-6) : 1 // g <- g * c / ||g||
    this.stepCount++
    const t = this.stepCount
    const { beta1: b1, beta2: b2, eps } = this
    const bias1 = 1 - b1 ** t
    const bias2 = 1 - b2 ** t
    tf.tidy(() => {
      for (const [name, p] of this.params) {
        const raw = grads[name]
        if (!raw) continue
        const m = this.m.get(name)!
        const v = this.v.get(name)!
        const decay = this.decayed.has(name) ? this.weightDecay : 0
        // the same update as below, in one native pass where the backend has one
        if (nativeAdamW(p, m, v, raw, { lr, beta1: b1, beta2: b2, eps, decay, bias1, bias2, clipScale }))
          continue
        const g = clipScale === 1 ? raw : tf.mul(raw, clipScale)
        m.assign(tf.add(tf.mul(m, b1), tf.mul(g, 1 - b1))) // m = b1 m + (1 - b1) g
        v.assign(tf.add(tf.mul(v, b2), tf.mul(tf.square(g), 1 - b2))) // v = b2 v + (1 - b2) g^2
        const update = tf.div(tf.div(m, bias1), tf.add(tf.sqrt(tf.div(v, bias2)), eps)) // m^ / (sqrt(v^) + eps)
        const decayed =
          this.decayed.has(name) && this.weightDecay > 0 ? tf.mul(p, 1 - lr * this.weightDecay) : p
        p.assign(tf.sub(decayed, tf.mul(update, lr))) // p = p (1 - lr wd) - lr m^/(sqrt(v^)+eps)
      }
    })
    return { gradNorm, clipScale, lr, step: t }
  }

  /** Moments as plain arrays (`m.<name>`, `v.<name>`), for resuming; with the step count. */
  async state(): Promise<{ step: number; tensors: Record<string, Float32Array> }> {
    const tensors: Record<string, Float32Array> = {}
    // copies: the native engine updates the moments in place
    for (const [name, m] of this.m) tensors[`m.${name}`] = Float32Array.from((await m.data()) as Float32Array)
    for (const [name, v] of this.v) tensors[`v.${name}`] = Float32Array.from((await v.data()) as Float32Array)
    return { step: this.stepCount, tensors }
  }

  /** Restores `state()`. @throws ShapeError when a moment is missing or has the wrong size. */
  loadState(state: { step: number; tensors: Readonly<Record<string, Float32Array>> }): void {
    for (const [prefix, moments] of [
      ['m', this.m],
      ['v', this.v],
    ] as const) {
      for (const [name, variable] of moments) {
        const data = state.tensors[`${prefix}.${name}`]
        if (!data || data.length !== variable.size)
          throw new ShapeError(`${prefix}.${name}`, `${variable.size} values`, [data?.length ?? 0])
        tf.tidy(() => variable.assign(tf.tensor(data, variable.shape)))
      }
    }
    this.stepCount = state.step
  }

  /** Frees the moments. */
  dispose(): void {
    for (const t of [...this.m.values(), ...this.v.values()]) t.dispose()
  }
}
