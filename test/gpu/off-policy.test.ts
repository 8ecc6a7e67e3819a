import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { AdamW } from '../../gpu/adamw.ts'
import { ConfigError, UnknownVariantError } from '../../gpu/errors.ts'
import { computePolicyLossGrpoTcr, GRPO_TCR_DEFAULTS } from '../../gpu/grpo.ts'
import {
  getOffPolicyCorrection,
  OFF_POLICY_DEFAULTS,
  type OffPolicyConfig,
  type OffPolicyName,
  offPolicyMetrics,
} from '../../gpu/off-policy.ts'
import type { RlBatch } from '../../gpu/rl-batch.ts'
import { RL_STEP_DEFAULTS, rlStep } from '../../gpu/rl-step.ts'
import { createTransformer, disposeTransformer } from '../../gpu/transformer.ts'
import { useTestBackend } from '../support/test-backend.ts'

// A batch of 2 x 4: column 0 untrained, row 1's last token padding. The raw importance weights
// w = exp(logp_prox - logp_behavior) of the trained tokens are 0.25, 1, 3 (row 0) and 8, 0.6 (row 1).
const mask = [
  [0, 1, 1, 1],
  [0, 1, 1, 0],
]
const w = [
  [1, 0.25, 1, 3],
  [1, 8, 0.6, 1],
]
const behavior = [
  [0, -1, -2, -1.5],
  [0, -0.5, -3, 0],
]
const proximal = behavior.map((row, i) => row.map((b, t) => (mask[i]![t] ? b + Math.log(w[i]![t]!) : b)))
// The policy being trained moved a little from the proximal one (so the clip has work to do).
const delta = [
  [0, 0.1, -0.4, 0.5],
  [0, -0.05, 0.3, 0],
]
const theta = proximal.map((row, i) => row.map((p, t) => p + delta[i]![t]!))
const advantages = [
  [0, 1, -1, 2],
  [0, -0.5, 1.5, 0],
]

/** The plain-loop reference: anchor, weight and GRPO-TCR token-mean loss of each correction. */
function reference(config: OffPolicyConfig) {
  const { eps_low, eps_high, c } = GRPO_TCR_DEFAULTS
  const weights: number[][] = []
  let capped = 0
  let masked = 0
  let tokens = 0
  let weightSum = 0
  let weightMax = 0
  let lossSum = 0
  for (let i = 0; i < 2; i++) {
    let seqLog = 0
    for (let t = 0; t < 4; t++) if (mask[i]![t]) seqLog += proximal[i]![t]! - behavior[i]![t]!
    const row: number[] = []
    for (let t = 0; t < 4; t++) {
      const raw = config.level === 'sequence' && config.name === 'tis' ? Math.exp(seqLog) : w[i]![t]!
      let weight = 1
      if (config.name === 'decoupled' || config.name === 'tis') weight = Math.min(raw, config.cap)
      if (config.name === 'icepop') weight = raw < config.low || raw > config.high ? 0 : 1
      row.push(weight)
      if (!mask[i]![t]) continue
      if (config.name !== 'none') {
        tokens++
        weightSum += raw
        weightMax = Math.max(weightMax, raw)
        if ((config.name === 'decoupled' || config.name === 'tis') && raw > config.cap) capped++
        if (config.name === 'icepop' && weight === 0) masked++
      }
      const anchor = config.name === 'none' ? behavior[i]![t]! : proximal[i]![t]!
      const r = Math.exp(theta[i]![t]! - anchor)
      const a = advantages[i]![t]!
      let loss = Math.max(-r * a, -Math.min(Math.max(r, 1 - eps_low), 1 + eps_high) * a)
      if (a < 0) loss = Math.min(loss, -c * a)
      lossSum += weight * loss
    }
    weights.push(row)
  }
  const trained = mask.flat().reduce((s, m) => s + m, 0)
  return { weights, loss: lossSum / trained, totals: { tokens, weightSum, weightMax, capped, masked } }
}

function tensorVersion(config: OffPolicyConfig) {
  return tf.tidy(() => {
    const correction = getOffPolicyCorrection(config.name)
    const m = tf.tensor2d(mask)
    const out = correction.apply(
      { behaviorLogProbs: tf.tensor2d(behavior), proxLogProbs: tf.tensor2d(proximal), mask: m },
      config,
    )
    const { loss } = computePolicyLossGrpoTcr({
      logProbs: tf.tensor2d(theta),
      behaviorLogProbs: out.anchorLogProbs,
      advantages: tf.tensor2d(advantages),
      mask: m,
      weights: out.weights,
    })
    const read = (t?: tf.Scalar) => (t ? t.dataSync()[0]! : 0)
    return {
      needsProximal: correction.needsProximal,
      weights: out.weights.arraySync(),
      anchor: out.anchorLogProbs.arraySync(),
      loss: loss.dataSync()[0]!,
      totals: out.stats
        ? {
            tokens: read(out.stats.tokens),
            weightSum: read(out.stats.weightSum),
            weightMax: read(out.stats.weightMax),
            capped: read(out.stats.capped),
            masked: read(out.stats.masked),
          }
        : undefined,
    }
  })
}

const near = (got: number, want: number, what: string, tol = 1e-5) =>
  assert.ok(Math.abs(got - want) <= tol * Math.max(1, Math.abs(want)), `${what}: ${got} vs ${want}`)

function matches(config: OffPolicyConfig) {
  const ref = reference(config)
  const got = tensorVersion(config)
  ref.weights.forEach((row, i) => {
    row.forEach((v, t) => {
      if (mask[i]![t]) near(got.weights[i]![t]!, v, `${config.name} weight [${i}, ${t}]`)
    })
  })
  near(got.loss, ref.loss, `${config.name} loss`)
  return { ref, got }
}

const cfg = (name: OffPolicyName, extra: Partial<OffPolicyConfig> = {}): OffPolicyConfig => ({
  ...OFF_POLICY_DEFAULTS,
  name,
  ...extra,
})

describe('gpu/off-policy', () => {
  before(async () => {
    await useTestBackend()
  })

  it('off-policy - none: the ratio against the behavior policy, weight 1, no proximal pass, no metrics', () => {
    const { got } = matches(cfg('none'))
    assert.equal(got.needsProximal, false)
    assert.deepEqual(got.anchor, behavior)
    assert.equal(got.totals, undefined)
  })

  it('off-policy - decoupled: clip around the proximal policy, token loss times min(w, cap) (cap 2)', () => {
    const { ref, got } = matches(cfg('decoupled'))
    assert.equal(got.needsProximal, true)
    // min(w, 2) = 0.25, 1, 2 | 2, 0.6
    assert.deepEqual(
      [got.weights[0]!.slice(1), got.weights[1]!.slice(1, 3)].map((r) =>
        r.map((v) => Math.round(v * 1e6) / 1e6),
      ),
      [
        [0.25, 1, 2],
        [2, 0.6],
      ],
    )
    const metrics = offPolicyMetrics(got.totals!)
    assert.deepEqual(ref.totals, { tokens: 5, weightSum: 12.85, weightMax: 8, capped: 2, masked: 0 })
    near(metrics['off_policy/weight_mean']!, 12.85 / 5, 'weight mean')
    near(metrics['off_policy/weight_max']!, 8, 'weight max')
    assert.equal(metrics['off_policy/capped_frac'], 2 / 5)
    assert.equal(metrics['off_policy/masked_frac'], 0)
  })

  it('off-policy - tis per token: min(w, cap) (cap 4: only w = 8 is capped)', () => {
    const { got } = matches(cfg('tis', { cap: 4 }))
    near(got.weights[1]![1]!, 4, 'capped weight')
    near(got.weights[0]![3]!, 3, 'weight under the cap')
    assert.equal(offPolicyMetrics(got.totals!)['off_policy/capped_frac'], 1 / 5)
  })

  it('off-policy - tis per sequence: min(prod_t w_t, cap) on every token of the sequence', () => {
    const { ref, got } = matches(cfg('tis', { level: 'sequence' }))
    // row 0: 0.25 * 1 * 3 = 0.75 (under the cap); row 1: 8 * 0.6 = 4.8 -> 2
    for (const t of [1, 2, 3]) near(got.weights[0]![t]!, 0.75, `row 0 token ${t}`)
    for (const t of [1, 2]) near(got.weights[1]![t]!, 2, `row 1 token ${t}`)
    const metrics = offPolicyMetrics(got.totals!)
    near(ref.totals.weightSum, 3 * 0.75 + 2 * 4.8, 'reference weight sum', 1e-12)
    near(metrics['off_policy/weight_mean']!, (3 * 0.75 + 2 * 4.8) / 5, 'weight mean')
    near(metrics['off_policy/weight_max']!, 4.8, 'weight max')
    assert.equal(metrics['off_policy/capped_frac'], 2 / 5)
  })

  it('off-policy - icepop: tokens whose w leaves [0.5, 5] are masked out (w = 0.25 and w = 8)', () => {
    const { got } = matches(cfg('icepop'))
    assert.deepEqual(
      [got.weights[0]!.slice(1), got.weights[1]!.slice(1, 3)],
      [
        [0, 1, 1],
        [0, 1],
      ],
    )
    const metrics = offPolicyMetrics(got.totals!)
    assert.equal(metrics['off_policy/masked_frac'], 2 / 5)
    assert.equal(metrics['off_policy/capped_frac'], 0)
    // A wider band keeps every token.
    const wide = matches(cfg('icepop', { low: 0.1, high: 10 })).got
    assert.equal(offPolicyMetrics(wide.totals!)['off_policy/masked_frac'], 0)
  })

  it('off-policy - bad input: unknown names list the valid ones; bad cap, band, level and a missing proximal are named', () => {
    assert.throws(
      () => getOffPolicyCorrection('ppo'),
      (e: unknown) =>
        e instanceof UnknownVariantError && e.message.endsWith('valid names: decoupled, icepop, none, tis'),
    )
    const input = {
      behaviorLogProbs: tf.tensor2d(behavior),
      proxLogProbs: tf.tensor2d(proximal),
      mask: tf.tensor2d(mask),
    }
    const field = (name: string) => (e: unknown) => e instanceof ConfigError && e.field === name
    assert.throws(
      () => getOffPolicyCorrection('tis').apply(input, cfg('tis', { cap: 0.5 })),
      field('offPolicy.cap'),
    )
    assert.throws(
      () => getOffPolicyCorrection('icepop').apply(input, cfg('icepop', { low: 1.2 })),
      field('offPolicy.low'),
    )
    assert.throws(
      () => getOffPolicyCorrection('icepop').apply(input, cfg('icepop', { high: 1 })),
      field('offPolicy.high'),
    )
    assert.throws(
      () => getOffPolicyCorrection('tis').apply(input, cfg('tis', { level: 'batch' as never })),
      field('offPolicy.level'),
    )
    const { proxLogProbs: _, ...noProx } = input
    assert.throws(
      () => getOffPolicyCorrection('decoupled').apply(noProx, cfg('decoupled')),
      field('proxLogProbs'),
    )
  })
})

describe('gpu/rl-step with an off-policy correction', () => {
  before(async () => {
    await useTestBackend()
  })

  const tiny = { layers: 1, width: 16, heads: 2, contextLength: 8, vocabSize: 12, mlpHidden: 32 }
  /** Two rows whose behavior log-probabilities are far from the model's (stale tokens: w = exp(logp_prox + 4)). */
  function staleBatch(): RlBatch {
    const rows = [
      [1, 2, 3, 4, 5, 6],
      [1, 2, 3, 7, 8, 9],
    ]
    return {
      batch: 2,
      seqLen: 6,
      tokens: Int32Array.from(rows.flat()),
      lossMask: Float32Array.from(rows.flatMap((r) => r.map((_, j) => (j >= 3 ? 1 : 0)))),
      behaviorLogprobs: new Float32Array(12).fill(-8),
      weightVersions: new Int32Array(12),
      tasks: ['toy', 'toy'],
      groupIds: ['g', 'g'],
      rewards: Float32Array.from([1, 0]),
    }
  }
  async function step(offPolicy?: OffPolicyConfig) {
    const model = createTransformer(tiny, { seed: 3 })
    const optimizer = new AdamW(model.params)
    try {
      return await rlStep({ model, optimizer, lr: 1e-3, version: 0 }, staleBatch(), {
        ...RL_STEP_DEFAULTS,
        taskAdvantageNorm: false,
        ...(offPolicy ? { offPolicy } : {}),
      })
    } finally {
      optimizer.dispose()
      disposeTransformer(model)
    }
  }

  it('rl-step - the chosen correction reaches the loss: its ratio, its weights, its metrics', async () => {
    const none = await step()
    assert.equal(none['off_policy/weight_mean'], undefined)
    assert.ok(
      none['policy/ratio_mean']! > 100,
      `against the behavior policy the ratio is large: ${none['policy/ratio_mean']}`,
    )
    // Every ratio is past the clip (A > 0) or the dual clip (A < 0): no gradient is left.
    assert.equal(none['policy/clip_frac_high']! + none['policy/dual_clip_frac']!, 1)
    assert.equal(none['optim/grad_norm'], 0)
    // decoupled: the ratio is taken against the proximal policy = the step's own weights, so it is 1.
    const decoupled = await step(cfg('decoupled', { cap: 2 }))
    near(decoupled['policy/ratio_mean']!, 1, 'decoupled ratio')
    assert.ok(
      decoupled['off_policy/weight_mean']! > 2,
      `raw weights exp(logp_prox + 8): ${decoupled['off_policy/weight_mean']}`,
    )
    assert.equal(decoupled['off_policy/capped_frac'], 1)
    assert.ok(decoupled['optim/grad_norm']! > 0, 'decoupled: the weighted loss has a gradient')
    // icepop with [0.5, 5]: every token's w is far above 5, so every token is masked and no gradient is left.
    const icepop = await step(cfg('icepop'))
    assert.equal(icepop['off_policy/masked_frac'], 1)
    assert.equal(icepop['optim/grad_norm'], 0)
    assert.equal(icepop['policy/loss'], 0)
  })

  it('rl-step - a bad off-policy config is refused before any update', async () => {
    await assert.rejects(
      step(cfg('tis', { cap: 0 })),
      (e: unknown) => e instanceof ConfigError && e.field === 'offPolicy.cap',
    )
    await assert.rejects(step({ ...cfg('none'), name: 'x' as never }), UnknownVariantError)
  })
})
