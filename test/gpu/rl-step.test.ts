import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { AdamW } from '../../gpu/adamw.ts'
import { chooseBackend } from '../../gpu/backend.ts'
import { computeBatchAdvantages } from '../../gpu/batch-advantages.ts'
import { ConfigError, ShapeError } from '../../gpu/errors.ts'
import { lengthBuckets } from '../../gpu/micro-batch.ts'
import type { RlBatch } from '../../gpu/rl-batch.ts'
import { RL_STEP_DEFAULTS, rlStep } from '../../gpu/rl-step.ts'
import { createTransformer, disposeTransformer, forward, type Transformer } from '../../gpu/transformer.ts'
import { useTestBackend } from '../support/test-backend.ts'

const tiny = { layers: 1, width: 16, heads: 2, contextLength: 8, vocabSize: 12, mlpHidden: 32 }

/** Log-probabilities `[batch, seqLen]` of each token given the ones before (column 0 is 0). */
function logprobsOf(model: Transformer, tokens: number[][]): number[][] {
  return tf.tidy(() => {
    const t = tf.tensor2d(tokens, undefined, 'int32')
    const [b, n] = t.shape
    const logits = forward(model, t.slice([0, 0], [b, n - 1]) as tf.Tensor2D) as tf.Tensor3D
    const logSm = logits.logSoftmax().arraySync()
    return tokens.map((row, i) => row.map((tok, j) => (j === 0 ? 0 : logSm[i]![j - 1]![tok]!)))
  })
}

/** A batch from token rows; the last `response` tokens of each row are trained. */
function makeBatch(
  model: Transformer,
  rows: number[][],
  response: number,
  rewards: number[],
  extra: Partial<RlBatch> = {},
): RlBatch {
  const seqLen = rows[0]!.length
  const lp = logprobsOf(model, rows)
  return {
    batch: rows.length,
    seqLen,
    tokens: Int32Array.from(rows.flat()),
    lossMask: Float32Array.from(rows.flatMap((r) => r.map((_, j) => (j >= seqLen - response ? 1 : 0)))),
    behaviorLogprobs: Float32Array.from(lp.flat()),
    weightVersions: new Int32Array(rows.length * seqLen),
    tasks: rows.map(() => 'toy'),
    groupIds: rows.map(() => 'g0'),
    rewards: Float32Array.from(rewards),
    ...extra,
  }
}

/** Seeded uniform [0, 1) (mulberry32). */
function rng(seed: number): () => number {
  let s = seed >>> 0
  return () => {
    s = (s + 0x6d2b79f5) >>> 0
    let t = s
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

describe('gpu/rl-step', () => {
  before(async () => {
    await useTestBackend()
  })

  it('rl-step - one step raises the log-probability of positive-advantage tokens and lowers negative ones', async () => {
    const model = createTransformer(tiny, { seed: 1 })
    const rows = [
      [1, 2, 3, 4, 5, 6],
      [1, 2, 3, 7, 8, 9],
      [1, 2, 3, 4, 5, 6],
      [1, 2, 3, 7, 8, 9],
    ]
    const batch = makeBatch(model, rows, 3, [1, 0, 1, 0])
    const before = logprobsOf(model, rows)
    const metrics = await rlStep({ model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 }, batch)
    const after = logprobsOf(model, rows)
    const responseLogp = (lp: number[][], i: number) => lp[i]!.slice(3).reduce((s, v) => s + v, 0)
    assert.ok(responseLogp(after, 0) > responseLogp(before, 0) + 0.01, 'positive response went up')
    assert.ok(responseLogp(after, 1) < responseLogp(before, 1) - 0.01, 'negative response went down')
    assert.ok(Math.abs(metrics['policy/ratio_mean']! - 1) < 1e-5, 'on-policy ratio is 1')
    assert.equal(metrics['policy/clip_frac_high'], 0)
    assert.ok(metrics['optim/grad_norm']! > 0)
    assert.equal(metrics['reward/mean/toy'], 0.5)
    assert.equal(metrics['batch/trained_tokens'], 12)
    disposeTransformer(model)
  })

  it('rl-step - metrics: staleness, reward and advantage per task, KL to an identical reference is 0', async () => {
    const model = createTransformer(tiny, { seed: 2 })
    const reference = createTransformer(tiny, { seed: 2 })
    const rows = [
      [1, 2, 3, 4],
      [1, 2, 5, 6],
      [7, 8, 3, 4],
      [7, 8, 9, 9],
    ]
    const batch = makeBatch(model, rows, 2, [1, 0, 10, 30], {
      tasks: ['a', 'a', 'b', 'b'],
      groupIds: ['a0', 'a0', 'b0', 'b0'],
      weightVersions: Int32Array.from([0, 0, 5, 5, 0, 0, 4, 3, 0, 0, 5, 5, 0, 0, 2, 2]),
    })
    let clock = 1000
    const metrics = await rlStep(
      {
        model,
        reference,
        optimizer: new AdamW(model.params),
        lr: 1e-3,
        version: 5,
        now: () => (clock += 250),
      },
      batch,
      { ...RL_STEP_DEFAULTS, beta: 0.1 },
    )
    // trained-token staleness: 0, 0, 1, 2, 0, 0, 3, 3 -> mean 9 / 8, max 3
    assert.equal(metrics['staleness/mean'], 9 / 8)
    assert.equal(metrics['staleness/max'], 3)
    assert.equal(metrics['reward/mean/a'], 0.5)
    assert.equal(metrics['reward/mean/b'], 20)
    for (const task of ['a', 'b']) {
      assert.ok(Math.abs(metrics[`adv/mean/${task}`]!) < 1e-6)
      assert.ok(Math.abs(metrics[`adv/std/${task}`]! - 1) < 1e-5)
    }
    assert.equal(metrics['actor/kl_ref'], 0)
    assert.equal(metrics['perf/step_ms'], 250)
    assert.equal(metrics['perf/tokens_per_s'], 8 / 0.25)
    disposeTransformer(model)
    disposeTransformer(reference)
  })

  it('rl-step - entropyCoef: the loss is L - coef * H and the update moves with it; at 0 the entropy is a metric alone', async () => {
    const rows = [
      [1, 2, 3, 4, 5, 6],
      [1, 2, 3, 7, 8, 9],
    ]
    const step = async (entropyCoef: number) => {
      const model = createTransformer(tiny, { seed: 3 })
      const batch = makeBatch(model, rows, 3, [1, 0])
      const metrics = await rlStep(
        { model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 },
        batch,
        {
          ...RL_STEP_DEFAULTS,
          entropyCoef,
        },
      )
      const weights = Array.from(model.params.get('embed')!.dataSync())
      disposeTransformer(model)
      return { metrics, weights }
    }
    const off = await step(0)
    const on = await step(0.5)
    assert.equal(off.metrics['loss/total'], off.metrics['policy/loss'])
    assert.ok(off.metrics['actor/entropy']! > 0)
    // the same entropy before the update either way; the total subtracts coef * H
    assert.ok(Math.abs(on.metrics['actor/entropy']! - off.metrics['actor/entropy']!) < 1e-6)
    const want = on.metrics['policy/loss']! - 0.5 * on.metrics['actor/entropy']!
    assert.ok(Math.abs(on.metrics['loss/total']! - want) < 1e-5, `${on.metrics['loss/total']} vs ${want}`)
    assert.notEqual(on.metrics['optim/grad_norm'], off.metrics['optim/grad_norm'])
    assert.ok(
      on.weights.some((w, i) => w !== off.weights[i]),
      'the entropy bonus changes the update',
    )
  })

  it('rl-step - the whole step frees every tensor it makes', async () => {
    const model = createTransformer(tiny, { seed: 3 })
    const optimizer = new AdamW(model.params)
    const batch = makeBatch(
      model,
      [
        [1, 2, 3, 4],
        [1, 2, 3, 5],
      ],
      2,
      [1, 0],
    )
    await rlStep({ model, optimizer, lr: 1e-3, version: 0 }, batch) // creates the optimizer's slots
    const before = tf.memory().numTensors
    await rlStep({ model, optimizer, lr: 1e-3, version: 1 }, batch)
    assert.equal(tf.memory().numTensors, before)
    disposeTransformer(model)
  })

  it('rl-step - bad batches and configs are rejected before any update', async () => {
    const model = createTransformer(tiny, { seed: 4 })
    const good = makeBatch(
      model,
      [
        [1, 2, 3, 4],
        [1, 2, 3, 5],
      ],
      2,
      [1, 0],
    )
    const state = { model, optimizer: new AdamW(model.params), lr: 1e-3, version: 0 }
    await assert.rejects(
      () => rlStep(state, { ...good, rewards: new Float32Array(3) }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'rewards',
    )
    await assert.rejects(
      () => rlStep(state, { ...good, lossMask: Float32Array.from([1, 0, 1, 1, 0, 0, 1, 1]) }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'lossMask',
    )
    await assert.rejects(
      () => rlStep(state, { ...good, tokens: new Int32Array(7) }),
      (e: unknown) => e instanceof ShapeError && e.argument === 'tokens',
    )
    await assert.rejects(
      () => rlStep(state, good, { ...RL_STEP_DEFAULTS, beta: 0.1 }),
      (e: unknown) => e instanceof ConfigError && e.field === 'beta',
    )
    await assert.rejects(
      () => rlStep(state, { ...good, rewards: Float32Array.from([Number.NaN, 0]) }),
      (e: unknown) => e instanceof ConfigError && e.field === 'rewards[0]',
    )
    disposeTransformer(model)
  })

  it('rl-step - batch advantages: overlong penalty and step advantages', async () => {
    const base: RlBatch = {
      batch: 2,
      seqLen: 5,
      tokens: new Int32Array(10),
      lossMask: Float32Array.from([0, 1, 1, 0, 0, 0, 1, 1, 1, 1]),
      behaviorLogprobs: new Float32Array(10),
      weightVersions: new Int32Array(10),
      tasks: ['t', 't'],
      groupIds: ['g', 'g'],
      rewards: Float32Array.from([1, 1]),
    }
    // equal rewards, but the second trajectory (4 tokens) is past L_max 3: rewards 1 and 0
    const cfg = { ...RL_STEP_DEFAULTS, taskAdvantageNorm: false, overlong: { L_max: 3, L_buf: 1 } }
    const { advantages, penalty } = computeBatchAdvantages(base, cfg)
    assert.deepEqual([...penalty], [0, -1])
    const a = 0.5 / (Math.SQRT1_2 + 1e-6) // (R - mean) / (unbiased std + eps)
    const got = advantages.dataSync()
    const want = [0, a, a, 0, 0, 0, -a, -a, -a, -a]
    for (const [k, w] of want.entries()) assert.ok(Math.abs(got[k]! - w) < 1e-5, `${k}: ${got[k]} vs ${w}`)
    const step = computeBatchAdvantages(
      { ...base, stepAdvantages: Float32Array.from([9, 2, 3, 9, 9, 9, 1, 1, 1, 1]) },
      { ...RL_STEP_DEFAULTS, taskAdvantageNorm: false },
    )
    assert.deepEqual(
      [...step.advantages.dataSync()].map((v) => v + 0),
      [0, 2, 3, 0, 0, 0, 1, 1, 1, 1],
    )
  })

  it('rl-step - a seeded GRPO run on "answer with the target string" reaches mean reward 0.8 within 60 steps', async () => {
    // Prompt token 0, three sampled tokens; reward = share of positions equal to the target 5 2 7.
    const target = [5, 2, 7]
    const model = createTransformer({ ...tiny, vocabSize: 8 }, { seed: 1 })
    const optimizer = new AdamW(model.params, { weightDecay: 0 })
    const random = rng(1)
    const groupSize = 32
    const rewardsPerStep: number[] = []
    const movingMean = () => rewardsPerStep.slice(-5).reduce((s, r) => s + r, 0) / 5
    for (let step = 0; step < 60 && !(rewardsPerStep.length >= 5 && movingMean() >= 0.8); step++) {
      const rows = Array.from({ length: groupSize }, () => [0])
      const behavior = Array.from({ length: groupSize }, () => [0])
      for (let t = 0; t < target.length; t++) {
        const probs = tf.tidy(() => {
          const logits = forward(model, tf.tensor2d(rows, undefined, 'int32')) as tf.Tensor3D
          return logits
            .slice([0, t, 0], [groupSize, 1, 8])
            .reshape([groupSize, 8])
            .softmax()
            .arraySync() as number[][]
        })
        probs.forEach((p, i) => {
          let u = random()
          let tok = 0
          while (tok < p.length - 1 && u >= p[tok]!) u -= p[tok++]!
          rows[i]!.push(tok)
          behavior[i]!.push(Math.log(p[tok]!))
        })
      }
      const rewards = rows.map((r) => r.slice(1).filter((tok, j) => tok === target[j]).length / target.length)
      rewardsPerStep.push(rewards.reduce((s, r) => s + r, 0) / groupSize)
      const batch: RlBatch = {
        batch: groupSize,
        seqLen: 4,
        tokens: Int32Array.from(rows.flat()),
        lossMask: Float32Array.from(rows.flatMap(() => [0, 1, 1, 1])),
        behaviorLogprobs: Float32Array.from(behavior.flat()),
        weightVersions: new Int32Array(groupSize * 4).fill(step),
        tasks: rows.map(() => 'echo'),
        groupIds: rows.map(() => `s${step}`),
        rewards: Float32Array.from(rewards),
      }
      await rlStep({ model, optimizer, lr: 1e-2, version: step }, batch)
    }
    const first = rewardsPerStep.slice(0, 5).reduce((s, r) => s + r, 0) / 5
    const trace = rewardsPerStep.map((r) => r.toFixed(2)).join(' ')
    assert.ok(first < 0.3, `initial reward ${first}: the task must start hard`)
    assert.ok(
      movingMean() >= 0.8,
      `5-step mean reward ${movingMean()} after ${rewardsPerStep.length} steps: ${trace}`,
    )
    disposeTransformer(model)
  })

  it('rl-step - the wasm backend gives the same step as cpu (loss, grad norm, updated weights; tol 1e-4)', async () => {
    const rows = [
      [1, 2, 3, 4, 5],
      [1, 2, 3, 7, 8],
    ]
    const stepOn = async (backend: string) => {
      await chooseBackend({ backend, log: () => {} })
      const model = createTransformer(tiny, { seed: 5 })
      const batch = makeBatch(model, rows, 2, [1, 0])
      const metrics = await rlStep({ model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 }, batch)
      const embed = Array.from(model.params.get('embed')!.dataSync())
      disposeTransformer(model)
      return { metrics, embed }
    }
    const cpu = await stepOn('cpu')
    const wasm = await stepOn('wasm')
    await useTestBackend()
    for (const key of ['loss/total', 'optim/grad_norm', 'actor/entropy', 'policy/approx_kl'] as const) {
      assert.ok(
        Math.abs(cpu.metrics[key]! - wasm.metrics[key]!) < 1e-4,
        `${key}: ${cpu.metrics[key]} vs ${wasm.metrics[key]}`,
      )
    }
    const worst = Math.max(...cpu.embed.map((v, i) => Math.abs(v - wasm.embed[i]!)))
    assert.ok(worst < 1e-4, `largest weight difference ${worst}`)
  })

  it('rl-step - micro-batches with gradient accumulation give the same step as one pass (tol 1e-5)', async () => {
    const rows = [
      [1, 2, 3, 4, 5],
      [1, 2, 3, 7, 8],
      [1, 4, 3, 2, 9],
      [1, 6, 5, 4, 3],
    ]
    for (const aggregation of ['token-mean', 'seq-mean-token-mean'] as const) {
      const stepWith = async (microBatchTokens: number) => {
        const model = createTransformer(tiny, { seed: 9 })
        const batch = makeBatch(model, rows, 2, [1, 0, 0.5, 0], {
          lossMask: Float32Array.from(
            // row 1 stops training before the end (its pass is cut to 4 columns); row 3 trains no token
            rows.flatMap((r, i) =>
              r.map((_, j) => (j >= (i === 2 ? 2 : 3) && j < [5, 4, 5, 4][i]! - (i === 3 ? 1 : 0) ? 1 : 0)),
            ),
          ),
        })
        const config = {
          ...RL_STEP_DEFAULTS,
          loss: { ...RL_STEP_DEFAULTS.loss, aggregation },
          microBatchTokens,
        }
        const metrics = await rlStep(
          { model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 },
          batch,
          config,
        )
        const embed = Array.from(model.params.get('embed')!.dataSync())
        disposeTransformer(model)
        return { metrics, embed }
      }
      const whole = await stepWith(1_000)
      const split = await stepWith(5) // one row (5 tokens) per pass
      for (const key of ['loss/total', 'optim/grad_norm', 'actor/entropy'] as const)
        assert.ok(
          Math.abs(whole.metrics[key]! - split.metrics[key]!) < 1e-5,
          `${aggregation} ${key}: ${whole.metrics[key]} vs ${split.metrics[key]}`,
        )
      const worst = Math.max(...whole.embed.map((v, i) => Math.abs(v - split.embed[i]!)))
      assert.ok(worst < 1e-5, `${aggregation}: largest weight difference ${worst}`)
    }
  })

  it('rl-step - length buckets: rows sorted by their last trained token, packed within the token budget', () => {
    const mask = (ends: number[]) =>
      Float32Array.from(ends.flatMap((e) => Array.from({ length: 6 }, (_, t) => (t >= 1 && t < e ? 1 : 0))))
    const batch = { batch: 4, seqLen: 6, lossMask: mask([6, 3, 0, 4]) } as RlBatch
    // lengths: 6, 3, 2 (no trained token: the 2-column minimum), 4
    assert.deepEqual(lengthBuckets(batch, 8), [
      { rows: [2, 1], length: 3 },
      { rows: [3], length: 4 },
      { rows: [0], length: 6 },
    ])
    assert.deepEqual(lengthBuckets(batch, 1000), [{ rows: [2, 1, 3, 0], length: 6 }])
    assert.deepEqual(lengthBuckets(batch, 1), [
      { rows: [2], length: 2 },
      { rows: [1], length: 3 },
      { rows: [3], length: 4 },
      { rows: [0], length: 6 },
    ])
  })

  it('rl-step - a batch without a trained token skips the update instead of failing', async () => {
    const model = createTransformer(tiny, { seed: 4 })
    const rows = [
      [1, 2, 3, 4],
      [1, 2, 5, 6],
    ]
    const batch = makeBatch(model, rows, 2, [1, 0], { lossMask: new Float32Array(8) })
    const before = Array.from(model.params.get('embed')!.dataSync())
    const metrics = await rlStep({ model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 }, batch)
    assert.equal(metrics['optim/skipped'], 1)
    assert.equal(metrics['optim/grad_norm'], 0)
    assert.deepEqual(Array.from(model.params.get('embed')!.dataSync()), before)
    disposeTransformer(model)
  })

  it('rl-step - dynamic sampling: a uniform group is left out, the step equals the one without it (tol 1e-6)', async () => {
    const informative = [
      [1, 2, 3, 4, 5, 6],
      [1, 2, 3, 7, 8, 9],
    ]
    const uniform = [
      [1, 5, 3, 2, 8, 6],
      [1, 5, 3, 9, 4, 2],
    ]
    const stepOn = async (
      rows: number[][],
      rewards: number[],
      groupIds: string[],
      dynamicSampling: boolean,
    ) => {
      const model = createTransformer(tiny, { seed: 5 })
      const batch = makeBatch(model, rows, 3, rewards, { groupIds, tasks: rows.map(() => 'toy') })
      const metrics = await rlStep(
        { model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 },
        batch,
        { ...RL_STEP_DEFAULTS, dynamicSampling },
      )
      const embed = Array.from(model.params.get('embed')!.dataSync())
      disposeTransformer(model)
      return { metrics, embed }
    }
    const alone = await stepOn(informative, [1, 0], ['a', 'a'], false)
    const both = [...informative, ...uniform]
    const groups = ['a', 'a', 'b', 'b']
    const masked = await stepOn(both, [1, 0, 0, 0], groups, true)
    const diluted = await stepOn(both, [1, 0, 0, 0], groups, false)
    assert.equal(masked.metrics['batch/uniform_groups'], 1)
    assert.equal(masked.metrics['batch/uniform_trajectories'], 2)
    assert.equal(masked.metrics['batch/trained_tokens'], 6)
    assert.equal(diluted.metrics['batch/trained_tokens'], 12)
    assert.equal(diluted.metrics['batch/uniform_groups'], undefined)
    const worst = Math.max(...alone.embed.map((v, i) => Math.abs(v - masked.embed[i]!)))
    assert.ok(worst < 1e-6, `largest weight difference to the step without the uniform group: ${worst}`)
    assert.ok(
      Math.abs(alone.metrics['loss/total']! - masked.metrics['loss/total']!) < 1e-6,
      `loss ${alone.metrics['loss/total']} vs ${masked.metrics['loss/total']}`,
    )
    // Without dynamic sampling the uniform group's zero-advantage tokens count in the token mean
    // (and in the task normalization): another gradient (AdamW's first step hides its scale).
    const ratio = diluted.metrics['optim/grad_norm']! / alone.metrics['optim/grad_norm']!
    assert.ok(Math.abs(ratio - 1) > 0.1, `grad norm diluted / alone: ${ratio}`)
  })

  it('rl-step - dynamic sampling: a batch of uniform groups only updates nothing', async () => {
    const model = createTransformer(tiny, { seed: 6 })
    const rows = [
      [1, 2, 3, 4],
      [1, 2, 5, 6],
    ]
    const batch = makeBatch(model, rows, 2, [1, 1])
    const before = Array.from(model.params.get('embed')!.dataSync())
    const metrics = await rlStep({ model, optimizer: new AdamW(model.params), lr: 1e-2, version: 0 }, batch, {
      ...RL_STEP_DEFAULTS,
      dynamicSampling: true,
    })
    assert.equal(metrics['optim/skipped'], 1)
    assert.equal(metrics['batch/uniform_groups'], 1)
    assert.equal(metrics['reward/mean'], 1)
    assert.deepEqual(Array.from(model.params.get('embed')!.dataSync()), before)
    disposeTransformer(model)
  })
})
