import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { TRIAD_SWITCHES_DEFAULTS } from '../../../actors/index.ts'
import {
  balancedStepAccuracy,
  judgedSteps,
  OnlineStepAccuracy,
  packGroups,
  sampleJudgedSteps,
  stepRewardAdvantages,
  stepRewardsTrusted,
  TRIAD_SWITCHES_OFF,
} from '../../../actors/testing.ts'
import { judgedGroup, judgedSample } from '../../support/judged-sample.ts'

/** A one-turn sample judged once (m = 1) with `verdict`, its step labelled `good`. */
const sample = (reward: number, verdict: number, good: number) =>
  judgedSample(
    reward,
    { judgements: [verdict], tokens: [verdict > 0 ? 0x2b : 0x2d], logprobs: [-0.7], prompt: [7, 8, 9] },
    { 'step_good/0': good },
  )
const group = judgedGroup

/**
 * `stepRewardAdvantages` of the groups, with their batch packed as the learner packs it
 * (`packGroups` with the rows as `stepAdvantages`).
 */
function stepRewardBatch(
  groups: Parameters<typeof stepRewardAdvantages>[0],
  switches: Parameters<typeof stepRewardAdvantages>[1],
  options: { maxTokens: number } & Parameters<typeof stepRewardAdvantages>[2],
) {
  const { maxTokens, ...rest } = options
  const { stepAdvantages, metrics } = stepRewardAdvantages(groups, switches, rest)
  return { stepAdvantages, metrics, batch: packGroups(groups, { maxTokens, stepAdvantages }) }
}

const on = { ...TRIAD_SWITCHES_DEFAULTS, stepReward: { enabled: true, lambda: 0.5, m: 1, minAccuracy: 0 } }

describe('node - triad learner glue', () => {
  it('node - step rewards R = O + lambda S, z-scored per step, reach the batch as token advantages', () => {
    const { batch, metrics } = stepRewardBatch([group([sample(1, 1, 1), sample(0, -1, 1)])], on, {
      maxTokens: 8,
    })
    // R = [1.5, -0.5]: mean 0.5, unbiased std sqrt(2); A = +-1/sqrt(2) on the generated tokens.
    const a = 1 / (Math.SQRT2 + 1e-6)
    const adv = [...batch.stepAdvantages!]
    assert.deepEqual(adv.slice(0, 2), [0, 0])
    assert.ok(Math.abs(adv[2]! - a) < 1e-6 && Math.abs(adv[3]! - a) < 1e-6)
    assert.ok(Math.abs(adv[6]! + a) < 1e-6 && Math.abs(adv[7]! + a) < 1e-6)
    assert.equal(metrics['reward_model/step_accuracy'], 0.5)
    assert.equal(metrics['reward/step_judged'], 2)
    assert.equal(metrics['triad/switch/step_reward'], 1)
    assert.equal(metrics['reward/malformed_groups'], 0)
  })

  it('node - one row of step advantages per sample, as long as its tokens, in packing order', () => {
    const short = {
      ...sample(0, -1, 1),
      tokens: Int32Array.from([1, 2, 3]),
      loss_mask: Uint8Array.from([0, 0, 1]),
      logprobs: Float32Array.from([0, 0, -0.5]),
      versions: Int32Array.from([-1, -1, 0]),
    }
    const groups = [group([sample(1, 1, 1), sample(0, -1, 1)]), group([short, sample(1, 1, 1)])]
    const { stepAdvantages } = stepRewardAdvantages(groups, on)
    assert.deepEqual(
      stepAdvantages.map((r) => r.length),
      [4, 4, 3, 4],
    )
  })

  it('node - overlong shaping enters the outcome the step rewards are built from (a group of 4, one sample past L_max)', () => {
    // Sample 1 is solved but 4 tokens long: with L_max 3, L_buf 1 its penalty is -1, so its O is 0.
    const long = {
      ...sample(1, 1, 1),
      tokens: Int32Array.from([1, 2, 3, 4, 5, 6]),
      loss_mask: Uint8Array.from([0, 0, 1, 1, 1, 1]),
      logprobs: Float32Array.from([0, 0, -0.5, -0.5, -0.5, -0.5]),
      versions: Int32Array.from([-1, -1, 0, 0, 0, 0]),
    }
    const groups = [group([sample(1, 1, 1), long, sample(0, 1, 1), sample(0, 1, 1)])]
    const overlong = { L_max: 3, L_buf: 1 }
    const { batch, metrics } = stepRewardBatch(groups, on, { maxTokens: 8, overlong })
    // R = O + 0.5 * 1 = [1.5, 0.5, 0.5, 0.5]: mean 0.75, unbiased std 0.5, A = [0.75, -0.25, -0.25, -0.25] / 0.5.
    const adv = [...batch.stepAdvantages!]
    const at = (row: number, t: number) => adv[row * batch.seqLen + t]!
    const near = (got: number, want: number) => assert.ok(Math.abs(got - want) < 1e-5, `${got} vs ${want}`)
    near(at(0, 2), 0.75 / (0.5 + 1e-6))
    for (const t of [2, 3, 4, 5]) near(at(1, t), -0.25 / (0.5 + 1e-6))
    near(at(2, 2), -0.25 / (0.5 + 1e-6))
    assert.equal(metrics['reward/step_overlong_penalty'], -0.25)
    // Without shaping, R = [1.5, 1.5, 0.5, 0.5]: the long sample's advantage is +0.5 / std(1/sqrt(3)).
    const plain = stepRewardBatch(groups, on, { maxTokens: 8 })
    near(plain.batch.stepAdvantages![batch.seqLen + 2]!, 0.5 / (Math.sqrt(1 / 3) + 1e-6))
    assert.equal(plain.metrics['reward/step_overlong_penalty'], undefined)
    // The packed batch is the same either way (the overlong option is not a packing option).
    assert.deepEqual(plain.batch.lossMask, batch.lossMask)
  })

  it('node - switched off, the judgements are ignored: outcome advantages, no step accuracy', () => {
    const { batch, metrics } = stepRewardBatch(
      [group([sample(1, 1, 1), sample(0, -1, 1)])],
      TRIAD_SWITCHES_OFF,
      {
        maxTokens: 8,
      },
    )
    // R = O = [1, 0]: mean 0.5, unbiased std sqrt(0.5), A = +-0.5 / sqrt(0.5).
    const a = 0.5 / (Math.sqrt(0.5) + 1e-6)
    assert.ok(Math.abs(batch.stepAdvantages![2]! - a) < 1e-6)
    assert.equal(metrics['reward_model/step_accuracy'], undefined)
    assert.equal(metrics['reward/step_judged'], 0)
    assert.equal(metrics['triad/switch/step_reward'], 0)
  })

  it('node - a group with a judgement outside {-1, 0, +1} falls back to outcome rewards and is counted', () => {
    const { metrics } = stepRewardBatch([group([sample(1, 5, 1), sample(0, -1, 1)])], on, { maxTokens: 8 })
    assert.equal(metrics['reward/malformed_groups'], 1)
    assert.equal(metrics['reward/step_judged'], 0)
  })

  it('node - judged steps carry their prompt, outcome and verdicts for the reward model', () => {
    const steps = judgedSteps([group([sample(1, 1, 1), sample(0, -1, 0)])], 1)
    assert.equal(steps.length, 2)
    assert.deepEqual([...steps[1]!.prompt], [7, 8, 9])
    assert.equal(steps[1]!.outcome, 0)
    assert.deepEqual(Array.from(steps[1]!.tokens), [0x2d])
    assert.deepEqual(Array.from(steps[1]!.judgements), [-1])
    const unjudged = { ...sample(1, 1, 1), judgements: undefined }
    assert.equal(judgedSteps([group([unjudged])], 1).length, 0)
  })
  it('node - a reward-model update takes as many steps of solved as of failed episodes, at most cap, mixed judgements first, seeded', () => {
    const step = (i: number, outcome: number, judgements: number[]) => ({
      prompt: Int32Array.from([i + 1]),
      outcome,
      tokens: Int32Array.from(judgements.map((j) => (j > 0 ? 0x2b : 0x2d))),
      logprobs: Float32Array.from(judgements.map(() => -0.7)),
      judgements: Int8Array.from(judgements),
    })
    // Steps 0-9 of solved episodes (0, 4, 8 mixed), steps 10-39 of failed ones (10, 15, ..., 35 mixed).
    const judged = Array.from({ length: 40 }, (_, i) =>
      i < 10 ? step(i, 1, i % 4 === 0 ? [1, -1] : [1, 1]) : step(i, 0, i % 5 === 0 ? [1, -1] : [-1, -1]),
    )
    const picked = sampleJudgedSteps(judged, 12, 3)
    const ids = picked.map((s) => s.prompt[0]! - 1)
    assert.deepEqual(
      picked.map((s) => s.outcome),
      [1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0],
    )
    const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b)
    assert.deepEqual(sorted(ids.slice(0, 3)), [0, 4, 8]) // the solved side's mixed steps first
    assert.deepEqual(sorted(ids.slice(6, 12)), [10, 15, 20, 25, 30, 35]) // the failed side's
    assert.equal(new Set(ids).size, 12) // without replacement
    assert.deepEqual(sampleJudgedSteps(judged, 12, 3), picked) // seeded
    assert.notDeepEqual(sampleJudgedSteps(judged, 12, 4), picked)
    // Without a cap in the way the smaller side decides: 10 solved, 10 of the 30 failed.
    const all = sampleJudgedSteps(judged, 64, 3)
    assert.equal(all.filter((s) => s.outcome === 1).length, 10)
    assert.equal(all.filter((s) => s.outcome === 0).length, 10)
    // Failed episodes only: nothing to balance, at most cap steps, mixed first.
    const failedOnly = sampleJudgedSteps(judged.slice(10), 12, 3).map((s) => s.prompt[0]! - 1)
    assert.equal(failedOnly.length, 12)
    assert.deepEqual(sorted(failedOnly.slice(0, 6)), [10, 15, 20, 25, 30, 35])
    // A neutral outcome (r = 0.5: O = 0) is on neither side.
    const neutral = [step(0, 0.5, [1, -1]), step(1, 1, [1, -1]), step(2, 0, [1, -1])]
    assert.deepEqual(
      sampleJudgedSteps(neutral, 12, 3).map((s) => s.outcome),
      [1, 0],
    )
  })
  it('node - trust gate: step rewards only when the pooled online balanced accuracy reaches minAccuracy', () => {
    // sample(reward, verdict, good label): three good steps judged +, one bad step judged +.
    const groups = [group([sample(1, 1, 1), sample(1, 1, 1), sample(0, 1, 1), sample(0, 1, 0)])]
    const { metrics } = stepRewardBatch(groups, on, { maxTokens: 8 })
    assert.equal(metrics['reward_model/labelled_good'], 3)
    assert.equal(metrics['reward_model/right_good'], 3)
    assert.equal(metrics['reward_model/labelled_bad'], 1)
    assert.equal(metrics['reward_model/right_bad'], 0)
    assert.equal(metrics['reward_model/step_accuracy'], 0.75) // plain accuracy flatters an always-+ judge
    assert.equal(metrics['reward_model/step_balanced_accuracy'], 0.5)
    const gated = { ...on, stepReward: { ...on.stepReward, minAccuracy: 0.6 } }
    const online = new OnlineStepAccuracy()
    online.add(metrics)
    assert.equal(stepRewardsTrusted(gated, { ...metrics, ...online.metrics() }), false) // pooled 0.5
    assert.equal(stepRewardsTrusted(on, metrics), true) // minAccuracy 0: no gate
    const good = stepRewardBatch([group([sample(1, 1, 1), sample(0, -1, 0), sample(0, -1, 0)])], on, {
      maxTokens: 8,
    }).metrics
    assert.equal(good['reward_model/step_balanced_accuracy'], 1)
    online.add(good)
    online.add(good)
    // Pooled: good steps 3 + 1 + 1 judged, 3 + 1 + 1 right; bad steps 1 + 2 + 2, 0 + 2 + 2 right.
    assert.equal(online.metrics()['reward_model/online_balanced_accuracy'], (1 + 4 / 5) / 2)
    assert.equal(stepRewardsTrusted(gated, { ...good, ...online.metrics() }), true)
    // A batch whose judged steps are all good has no balanced accuracy of its own; the pooled one
    // still decides (the batch's own would leave most small batches untrusted).
    const onlyGood = { 'reward_model/labelled_good': 2, 'reward_model/right_good': 2 }
    assert.equal(balancedStepAccuracy(onlyGood), undefined)
    online.add(onlyGood)
    assert.equal(stepRewardsTrusted(gated, { ...onlyGood, ...online.metrics() }), true)
    // no pooled accuracy yet (no bad step judged so far): not trusted; switch off: never
    assert.equal(stepRewardsTrusted(gated, onlyGood), false)
    assert.equal(
      stepRewardsTrusted(
        { ...gated, stepReward: { ...gated.stepReward, enabled: false } },
        {
          ...good,
          ...online.metrics(),
        },
      ),
      false,
    )
  })
})
