import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  judgementAccuracy,
  parseTriadSwitches,
  policyStepAdvantages,
  stepLabels,
  switchMetrics,
  TRIAD_SWITCHES_DEFAULTS,
  TriadConfigError,
} from '../../../actors/triad/index.ts'
import { ConfigError } from '../../../gpu/index.ts'
import { computeAdvantageGrpo } from '../../../gpu/testing.ts'
import { metricRecord } from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

const close = (actual: ArrayLike<number>, expected: readonly number[], tol = 1e-5) => {
  assert.equal(actual.length, expected.length)
  for (let i = 0; i < expected.length; i++)
    assert.ok(Math.abs(actual[i]! - expected[i]!) <= tol, `index ${i}: ${actual[i]} vs ${expected[i]}`)
}

// Two samples of one instance, two turns each (m = 2): turns start at 1 and 4, tool result at 3.
const sample = (reward: number) => ({
  reward,
  turn_starts: Int32Array.from([1, 4]),
  loss_mask: Uint8Array.from([0, 1, 1, 0, 1, 1]),
})
const samples = [sample(1), sample(0)]
const judged = [Int8Array.from([1, 1, -1, 0]), Int8Array.from([-1, -1, 1, -1])]
const on = { ...TRIAD_SWITCHES_DEFAULTS, stepReward: { enabled: true, lambda: 0.5, m: 2, minAccuracy: 0 } }
const off = { ...on, stepReward: { ...on.stepReward, enabled: false } }

describe('actors/triad/policy-step-reward', () => {
  before(async () => {
    await useTestBackend()
  })

  it('step labels - from step_good/<j>, 0 where the task gives none; accuracy over labelled steps', () => {
    assert.deepEqual(
      [...stepLabels({ turns: 3, metrics: { 'step_good/0': 1, 'step_good/2': 0 } })],
      [1, 0, -1],
    )
    // steps: label +1 with [+1, -1], label 0 (skipped), label -1 with [-1, 0 (unparseable)] -> 2 of 4
    assert.equal(judgementAccuracy([1, -1, 1, 1, -1, 0], 2, [1, 0, -1]), 0.5)
    assert.equal(judgementAccuracy([1, 1], 2, [0]), undefined)
    assert.throws(() => judgementAccuracy([1], 2, [1]), ConfigError)
  })

  it('policy step reward - on: R_j = O + lambda mean S_j, z-scored per step index, on each step tokens', () => {
    // sample 0 (O=1): step 0 [+1,+1] -> 1.5; step 1 [-1, ?] -> 0.5
    // sample 1 (O=0): step 0 [-1,-1] -> -0.5; step 1 [+1,-1] -> 0
    // step 0: [1.5, -0.5] mean 0.5, unbiased std sqrt(2) -> +-1/sqrt(2); step 1: [0.5, 0] -> +-0.25/sqrt(0.125)
    const { tokenAdvantages, metrics } = policyStepAdvantages(samples, judged, on)
    const a0 = 1 / (Math.SQRT2 + 1e-6)
    const a1 = 0.25 / (Math.sqrt(0.125) + 1e-6)
    close(tokenAdvantages[0]!, [0, a0, a0, 0, a1, a1])
    close(tokenAdvantages[1]!, [0, -a0, -a0, 0, -a1, -a1])
    assert.equal(metrics['reward/step_reward_enabled'], 1)
    assert.equal(metrics['reward/step_judged'], 4)
    assert.equal(metrics['reward/judgement_mean'], -1 / 7)
    assert.equal(metrics['reward/step_reward_mean'], (1.5 + 0.5 - 0.5 + 0) / 4)
    assert.equal(metrics['reward_model/step_accuracy'], undefined, 'no labels, no accuracy')
    // With the task's labels on sample 0 (step 0 good, step 1 bad): [+1, +1] both right, [-1, ?] one of two
    const labelled = [{ ...samples[0]!, metrics: { 'step_good/0': 1, 'step_good/1': 0 } }, samples[1]!]
    const counts = policyStepAdvantages(labelled, judged, on).metrics
    assert.equal(counts['reward_model/step_accuracy'], 3 / 4)
    // Every labelled step, and the steps before the episode's last (step 0 alone: good, both right).
    assert.deepEqual(
      [
        'labelled_good',
        'right_good',
        'labelled_bad',
        'right_bad',
        'earlier_steps/labelled_good',
        'earlier_steps/right_good',
        'earlier_steps/labelled_bad',
        'earlier_steps/right_bad',
      ].map((k) => metricRecord(counts)[`reward_model/${k}`]),
      [2, 2, 2, 1, 2, 2, 0, 0],
    )
  })

  it('policy step reward - off: judgements ignored, every step gets the GRPO advantage of the outcome', () => {
    const { tokenAdvantages, metrics } = policyStepAdvantages(samples, judged, off)
    const grpo = computeAdvantageGrpo({ rewards: tf.tensor1d([1, 0]), groupIds: ['g', 'g'] }).dataSync()
    close(tokenAdvantages[0]!, [0, grpo[0]!, grpo[0]!, 0, grpo[0]!, grpo[0]!])
    close(tokenAdvantages[1]!, [0, grpo[1]!, grpo[1]!, 0, grpo[1]!, grpo[1]!])
    assert.equal(metrics['reward/step_reward_enabled'], 0)
    assert.equal(metrics['reward/step_judged'], 0)
    assert.equal(metrics['reward/judgement_mean'], undefined)
    // unjudged samples with the switch on also fall back to R_j = O
    close(policyStepAdvantages(samples, [undefined, undefined], on).tokenAdvantages[0]!, [
      ...tokenAdvantages[0]!,
    ])
    assert.throws(() => policyStepAdvantages(samples, [Int8Array.from([1]), undefined], on), ConfigError)
  })

  it('switches - defaults, parsing, metrics and a clear error', () => {
    assert.deepEqual(parseTriadSwitches({ stepReward: { lambda: 0.3 } }), {
      adaptiveTasks: true,
      stepReward: { enabled: true, lambda: 0.3, m: 3, minAccuracy: 0.6 },
      trainRewardModel: true,
    })
    assert.deepEqual(switchMetrics(off), {
      'triad/switch/adaptive_tasks': 1,
      'triad/switch/step_reward': 0,
      'triad/switch/train_reward_model': 1,
    })
    assert.throws(
      () => parseTriadSwitches({ stepReward: { m: 0 } }),
      (e: unknown) => e instanceof TriadConfigError && /stepReward\.m/.test(e.message),
    )
  })
})
