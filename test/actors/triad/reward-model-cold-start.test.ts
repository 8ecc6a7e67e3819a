import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { runSeeds } from '../../../actors/runtime/index.ts'
import {
  loadRewardModelSft,
  playLabelledSteps,
  playPolicyLabelledSteps,
  REWARD_MODEL_SFT_FILE,
  RewardModel,
  type RewardModelSftConfig,
  rewardModelColdStart,
  rewardModelColdStartOnce,
  rewardModelSftMetrics,
} from '../../../actors/triad/index.ts'
import { createTransformer, disposeTransformer, getWeights, Tokenizer } from '../../../gpu/index.ts'
import { defineRecipe, nodeConfigOf, resolveTasks } from '../../../recipes/index.ts'
import { testBackendName, useTestBackend } from '../../support/test-backend.ts'

const run = { seed: 3, tasks: [{ name: 'calc', weight: 1, difficulty: 1 }] }
const sft: RewardModelSftConfig = {
  enabled: true,
  steps: 12,
  expertTrajectoriesPerTask: 6,
  policyTrajectoriesPerTask: 0,
  heldOutTrajectoriesPerTask: 2,
  errorRate: 0.3,
  successRate: 0.5,
  lr: 1e-2,
  batchTokens: 384,
  init: 'seed',
}
const modelConfig = {
  layers: 1,
  width: 16,
  heads: 2,
  contextLength: 384,
  vocabSize: new Tokenizer().vocabSize,
}

describe('actors/triad/reward-model-cold-start', () => {
  const dir = mkdtempSync(join(tmpdir(), 'triad-rm-sft-'))
  before(async () => {
    await useTestBackend()
  })
  after(() => rmSync(dir, { recursive: true, force: true }))

  it('reward-model-cold-start - expert episodes give labelled steps of both kinds, the same for the same seed', async () => {
    const a = await playLabelledSteps(run, 6, {
      errorRate: 0.3,
      successRate: 0.5,
      seedOf: (i) => run.seed * 7919 + 1 + i,
    })
    const b = await playLabelledSteps(run, 6, {
      errorRate: 0.3,
      successRate: 0.5,
      seedOf: (i) => run.seed * 7919 + 1 + i,
    })
    assert.deepEqual(a, b)
    assert.ok(a.some((s) => s.good) && a.some((s) => !s.good), 'good and bad steps')
    assert.ok(a.every((s) => s.step.task === 'calc' && s.step.step.role === 'assistant'))
    const clean = await playLabelledSteps(run, 6, {
      errorRate: 0,
      successRate: 1,
      seedOf: (i) => run.seed * 7919 + 1 + i,
    })
    assert.ok(
      clean.every((s) => s.good),
      'an expert without mistakes makes only good steps',
    )
  })

  it('reward-model-cold-start - trains once, saves reward-sft/, and a second learner loads it instead of training', async () => {
    const ckpt = join(dir, 'reward-sft')
    const rm = new RewardModel({ config: modelConfig, seed: 10 })
    const steps: number[] = []
    const first = await rewardModelColdStartOnce(rm, run, sft, ckpt, (r, total) => {
      assert.equal(total, 12)
      steps.push(r.step)
    })
    assert.equal(first.trained, true)
    assert.deepEqual(
      steps,
      Array.from({ length: 12 }, (_, i) => i + 1),
    )
    assert.equal(first.report.steps, 12)
    assert.ok(first.report.trainBad > 0 && first.report.trainGood > 0)
    assert.equal(first.report.examples, 2 * Math.min(first.report.trainBad, first.report.trainGood))
    assert.equal(first.report.before.unparseable, 1, 'the random judge never says + or -')
    assert.ok(first.report.after.unparseable < first.report.before.unparseable, JSON.stringify(first.report))
    assert.ok(existsSync(join(ckpt, REWARD_MODEL_SFT_FILE)))
    const m = rewardModelSftMetrics(first.report)
    assert.equal(m['reward_model/sft/steps'], 12)
    assert.equal(m['reward_model/sft/unparseable_before'], 1)

    // A restarted learner: the same seeded model, no training, the saved weights.
    const again = new RewardModel({ config: modelConfig, seed: 10 })
    const second = await rewardModelColdStartOnce(again, run, sft, ckpt, () =>
      assert.fail('no step on a resume'),
    )
    assert.equal(second.trained, false)
    assert.deepEqual(second.report, first.report)
    const [w1, w2] = [await getWeights(rm.model), await getWeights(again.model)]
    for (const k of Object.keys(w1)) assert.deepEqual(w2[k], w1[k], k)
    rm.dispose()
    again.dispose()
  })

  it('reward-model-cold-start - with sft.threads 2 each step takes two batches, one per thread', async () => {
    const single: number[] = []
    const parallel: number[] = []
    const a = new RewardModel({ config: modelConfig, seed: 10 })
    const b = new RewardModel({ config: modelConfig, seed: 10 })
    try {
      await rewardModelColdStart(a, run, sft, (r) => single.push(r.lossTokens))
      const report = await rewardModelColdStart(
        b,
        { ...run, sft: { threads: 2 } },
        sft,
        (r) => parallel.push(r.lossTokens),
        await testBackendName(),
      )
      assert.equal(report.steps, 12)
      assert.equal(parallel.length, 12)
      // One sequence of batchTokens (= contextLength) per batch: a step's loss tokens are its batches' sum.
      const perBatch = new Set(single)
      assert.equal(perBatch.size, 1, `one verdict's loss tokens per batch: ${single}`)
      assert.deepEqual(parallel, Array(12).fill(2 * single[0]!))
      assert.ok(report.after.unparseable < report.before.unparseable, JSON.stringify(report))
    } finally {
      a.dispose()
      b.dispose()
    }
  })

  it("reward-model-cold-start - the policy's own episodes add their labelled steps (policyTrajectoriesPerTask), measured apart on held-out ones", async () => {
    // A random policy on calc: its turns rarely parse, so its steps are the invalid actions a
    // fresh policy makes, labelled bad by the environment.
    const policy = {
      model: createTransformer(modelConfig, { seed: 21 }),
      tokenizer: new Tokenizer(),
      sampling: { maxNewTokens: 6, temperature: 1, top_p: 1 },
    }
    const own = { ...sft, steps: 2, policyTrajectoriesPerTask: 3 }
    try {
      const a = await playPolicyLabelledSteps(run, 3, policy, runSeeds(run.seed).rewardModelSftPolicyTrain)
      const b = await playPolicyLabelledSteps(run, 3, policy, runSeeds(run.seed).rewardModelSftPolicyTrain)
      assert.ok(a.length >= 3, `at least a step per episode: ${a.length}`)
      assert.deepEqual(b, a, 'the same seeds give the same episodes')
      assert.ok(a.every((s) => s.step.task === 'calc' && s.step.step.role === 'assistant'))
      const rm = new RewardModel({ config: modelConfig, seed: 10 })
      try {
        const withPolicy = await rewardModelColdStart(
          rm,
          run,
          own,
          undefined,
          await testBackendName(),
          policy,
        )
        assert.equal(withPolicy.policySteps, a.length)
        assert.equal(
          withPolicy.trainGood + withPolicy.trainBad,
          withPolicy.policySteps +
            (await playLabelledSteps(run, 6, { ...sft, seedOf: runSeeds(run.seed).rewardModelSftTrain }))
              .length,
        )
        assert.ok(withPolicy.policyAfter && withPolicy.policyAfter.steps > 0, JSON.stringify(withPolicy))
        assert.equal(
          rewardModelSftMetrics(withPolicy)['reward_model/sft/policy_balanced_accuracy_after'],
          withPolicy.policyAfter.balancedAccuracy,
        )
        // One task here: its own accuracy is the whole one.
        assert.deepEqual(withPolicy.policyAfterByTask, { calc: withPolicy.policyAfter })
        assert.equal(
          rewardModelSftMetrics(withPolicy)['reward_model/sft/policy_balanced_accuracy_after/calc'],
          withPolicy.policyAfter.balancedAccuracy,
        )
        const without = await rewardModelColdStart(
          rm,
          run,
          { ...own, policyTrajectoriesPerTask: 0 },
          undefined,
          await testBackendName(),
          policy,
        )
        assert.equal(without.policySteps, 0)
        assert.equal(without.policyAfter, undefined)
        assert.equal(
          'reward_model/sft/policy_balanced_accuracy_after' in rewardModelSftMetrics(without),
          false,
        )
      } finally {
        rm.dispose()
      }
    } finally {
      disposeTransformer(policy.model)
    }
  })

  it('reward-model-cold-start - an incomplete folder is no cold start; one of another size is an error', async () => {
    const rm = new RewardModel({ config: modelConfig, seed: 1 })
    assert.equal(await loadRewardModelSft(join(dir, 'nothing'), rm), undefined)
    const other = new RewardModel({ config: { ...modelConfig, width: 32 }, seed: 1 })
    await assert.rejects(loadRewardModelSft(join(dir, 'reward-sft'), other), {
      name: 'LearnerCheckpointError',
      message: /reward model config .* differs from the learner's/,
    })
    rm.dispose()
    other.dispose()
  })

  it('reward-model-cold-start - the recipe turns it on with step rewards and off without them', () => {
    const d = { id: 'r', path: '/tmp/r' } as Parameters<typeof nodeConfigOf>[1]
    const on = resolveTasks(defineRecipe({ tasks: [{ name: 'calc' }] }))
    const c = nodeConfigOf(on, d, 1).triad!.rewardModelSft!
    assert.deepEqual(c, {
      enabled: true,
      steps: 300,
      expertTrajectoriesPerTask: 128,
      policyTrajectoriesPerTask: 64,
      heldOutTrajectoriesPerTask: 8,
      errorRate: 0.3,
      successRate: 0.8,
      lr: 3e-3,
      batchTokens: on.model.contextLength,
      init: 'policy',
    })
    const noStep = resolveTasks(
      defineRecipe({
        tasks: [{ name: 'calc' }],
        triad: { stepReward: { enabled: false }, trainRewardModel: false },
      }),
    )
    assert.equal(nodeConfigOf(noStep, d, 1).triad!.rewardModelSft!.enabled, false)
    const off = resolveTasks(
      defineRecipe({ tasks: [{ name: 'calc' }], triad: { rewardModelSft: { enabled: false } } }),
    )
    assert.equal(nodeConfigOf(off, d, 1).triad!.rewardModelSft!.enabled, false)
    assert.throws(
      () => defineRecipe({ tasks: [{ name: 'calc' }], triad: { rewardModelSft: { errorRate: 0 } } }),
      /errorRate/,
    )
  })
})
