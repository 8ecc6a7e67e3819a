import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import {
  BAD_VERDICT_TOKEN,
  balanceSteps,
  GOOD_VERDICT_TOKEN,
  type LabelledStep,
  RewardModel,
  renderJudgePrompt,
  trainVerdictSft,
  verdictAccuracy,
  verdictSftExample,
} from '../../../actors/triad/index.ts'
import { ConfigError, createRng, getWeights, Tokenizer } from '../../../gpu/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

const MOVES = ['N', 'E', 'S', 'W'] as const
const FILLER = ['calm', 'dark', 'wide', 'cold', 'tall', 'soft', 'loud', 'pale']

/**
 * A compass step (goal to the north-east: N and E are good, S and W bad) after a user turn of two
 * seeded filler words, so held-out prompts are prompts the model never saw.
 */
function compass(rng: ReturnType<typeof createRng>): LabelledStep {
  const move = rng.int(4)
  const words = `${FILLER[rng.int(8)]} ${FILLER[rng.int(8)]} ${FILLER[rng.int(8)]}`
  return {
    step: {
      task: 'compass',
      history: [{ role: 'user', content: `goal NE, ${words}` }],
      step: { role: 'assistant', content: `go ${MOVES[move]}` },
    },
    good: move < 2,
  }
}

const set = (n: number, seed: number) => {
  const rng = createRng(seed)
  return Array.from({ length: n }, () => compass(rng))
}

describe('actors/triad/verdict-sft', () => {
  before(async () => {
    await useTestBackend()
  })

  it('verdict-sft - an example is the judge prompt then the verdict token, with the loss mask on the verdict only', () => {
    const tok = new Tokenizer()
    const [good, bad] = [true, false].map((g) => ({ ...set(1, 3)[0]!, good: g }))
    const prompt = renderJudgePrompt(tok, good!.step, 95, 0, { system: () => 'judge' })
    for (const [s, verdict] of [
      [good!, GOOD_VERDICT_TOKEN],
      [bad!, BAD_VERDICT_TOKEN],
    ] as const) {
      const ex = verdictSftExample(tok, s, 95, { system: () => 'judge' })
      assert.deepEqual([...ex.ids], [...prompt, verdict])
      assert.deepEqual([...ex.lossMask], [...new Array(prompt.length).fill(0), 1])
    }
  })

  it('verdict-sft - balanceSteps keeps every step of the minority class and as many of the other, seeded', () => {
    const steps = set(40, 5)
    const good = steps.filter((s) => s.good).length
    const n = Math.min(good, 40 - good)
    const a = balanceSteps(steps, 1)
    assert.equal(a.length, 2 * n)
    assert.equal(a.filter((s) => s.good).length, n)
    assert.deepEqual(balanceSteps(steps, 1), a, 'same seed, same draw')
    const minority = steps.filter((s) => s.good === good < 40 - good)
    for (const s of minority) assert.ok(a.includes(s), 'every minority step is kept')
    assert.deepEqual(
      balanceSteps(
        steps.filter((s) => s.good),
        1,
      ),
      [],
    )
  })

  it('verdict-sft - verdictAccuracy is (TPR + TNR) / 2 with unparseable verdicts wrong', () => {
    // good: +, +, 0, -  (TPR 2/4); bad: -, +  (TNR 1/2)
    const r = verdictAccuracy([1, 1, 0, -1, -1, 1], [true, true, true, true, false, false])
    assert.deepEqual(r, {
      balancedAccuracy: 0.5,
      goodAccuracy: 0.5,
      badAccuracy: 0.5,
      unparseable: 1 / 6,
      steps: 6,
    })
    assert.equal(verdictAccuracy([1, -1, -1], [true, false, false]).balancedAccuracy, 1)
    assert.equal(verdictAccuracy([1, 1], [true, false]).balancedAccuracy, 0.5)
    assert.throws(() => verdictAccuracy([1], [true, false]), {
      name: 'ConfigError',
      message: 'verdicts=1: expected one per label (2)',
    })
    assert.throws(() => verdictAccuracy([], []), ConfigError)
  })

  it('verdict-sft - trainVerdictSft refuses a set without bad steps, no held-out steps, or a bad step count', async () => {
    const rm = new RewardModel({
      config: { layers: 1, width: 16, heads: 2, contextLength: 96, vocabSize: 264 },
      prompt: { system: () => 'judge' },
    })
    try {
      const steps = set(20, 1)
      const cfg = { steps: 1, lr: 1e-3, batchTokens: 256, seed: 0 }
      await assert.rejects(
        trainVerdictSft(
          rm,
          steps.filter((s) => s.good),
          steps,
          cfg,
        ),
        { name: 'ConfigError', message: /needs good and bad labelled steps/ },
      )
      await assert.rejects(trainVerdictSft(rm, steps, [], cfg), { message: /needs held-out labelled steps/ })
      await assert.rejects(trainVerdictSft(rm, steps, steps, { ...cfg, steps: 0 }), {
        message: 'steps=0: must be a positive integer',
      })
    } finally {
      rm.dispose()
    }
  })

  it('verdict-sft - a random reward model learns to judge: held-out balanced accuracy well above 0.5, no unparseable verdict', async () => {
    const config = { layers: 2, width: 32, heads: 2, contextLength: 96, vocabSize: 264 }
    const rm = new RewardModel({ config, seed: 4, prompt: { system: () => 'judge' } })
    try {
      const start = await getWeights(rm.model)
      const losses: number[] = []
      // A few hundred steps: from random weights the verdict position must learn to read the step.
      const r = await trainVerdictSft(rm, set(96, 11), set(48, 12), {
        steps: 300,
        lr: 3e-3,
        batchTokens: 384,
        seed: 1,
        onLog: (rec, total) => {
          assert.equal(total, 300)
          losses.push(rec.loss)
        },
      })
      assert.equal(r.records.length, 300)
      assert.deepEqual(
        losses,
        r.records.map((x) => x.loss),
      )
      // Loss on the verdict token only: one loss token per example of the batch.
      assert.ok(r.records.every((x) => x.lossTokens >= 1 && x.lossTokens <= 384 / 16))
      assert.equal(r.before.unparseable, 1, 'a random model never says + or -')
      assert.equal(r.before.balancedAccuracy, 0)
      assert.equal(r.after.unparseable, 0)
      assert.ok(r.after.balancedAccuracy >= 0.9, `held-out balanced accuracy ${JSON.stringify(r.after)}`)
      const end = await getWeights(rm.model)
      assert.ok(Object.keys(start).some((k) => start[k]!.some((v, i) => v !== end[k]![i])))
    } finally {
      rm.dispose()
    }
  })
})
