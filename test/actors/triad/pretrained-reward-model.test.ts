import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { RewardModel, TRIAD_SWITCHES_DEFAULTS } from '../../../actors/index.ts'
import {
  type LabelledStep,
  LearnerCheckpointError,
  loadRewardModelCheckpoint,
  loadRewardModelSft,
  type PretrainedJudgeBase,
  RewardModelLearner,
  renderJudgePrompt,
  saveRewardModelCheckpoint,
  saveRewardModelSft,
  trainVerdictSft,
  verdictOf,
  verdictSftExample,
  verdictTokensOf,
} from '../../../actors/testing.ts'
import {
  ConfigError,
  disposeTransformer,
  fullLoraConfig,
  lastTokenLogits,
  loadChatFormatOf,
  loadHfModel,
  Tokenizer,
  type Transformer,
} from '../../../gpu/index.ts'
import { adapterShapes } from '../../../gpu/testing.ts'
import type { JudgeStep } from '../../../protocols/index.ts'
import { judgedGroup, judgedSample } from '../../support/judged-sample.ts'
import { useTestBackend } from '../../support/test-backend.ts'
import { writeTinyQwen3 } from '../../support/tiny-qwen3.ts'

/**
 * The reward model on a pretrained model: its own LoRA adapters on the policy's frozen base (tiny
 * random Qwen3-layout checkpoint with the real Qwen3 tokenizer and chat template), judging through
 * the model's own template and verdict ids.
 */

const switches = {
  ...TRIAD_SWITCHES_DEFAULTS,
  stepReward: { ...TRIAD_SWITCHES_DEFAULTS.stepReward, enabled: true, m: 2, minAccuracy: 0 },
}
const lora = { rank: 4, alpha: 8, targets: ['q_proj', 'v_proj', 'down_proj'] as const }

const step: JudgeStep = {
  task: 'calc',
  history: [
    { role: 'system', content: 'sys' },
    { role: 'user', content: 'make 7' },
    {
      role: 'assistant',
      content: 'first',
      tool_calls: [{ id: 'c0', type: 'function', function: { name: 'add', arguments: '{"a":3,"b":4}' } }],
    },
    { role: 'tool', content: 'r1', tool_call_id: 'c0' },
  ],
  step: { role: 'assistant', content: 'second' },
  result: [{ role: 'tool', content: 'r2', tool_call_id: 'c1' }],
}

/** Labelled steps whose label shows in the step's text (`good n` / `bad n`). */
function labelled(count: number): LabelledStep[] {
  return Array.from({ length: count }, (_, i) => ({
    step: { ...step, step: { role: 'assistant', content: `${i % 2 ? 'good' : 'bad'} ${i}` } },
    good: i % 2 === 1,
  }))
}

const weightsOf = async (model: Transformer, which: 'params' | 'frozen') => {
  const out: Record<string, Float32Array> = {}
  for (const [name, v] of model[which]) out[name] = (await v.data()) as Float32Array
  return out
}
/** Mean log-probability of each step's label verdict (`+` good, `-` bad) right after its judge prompt. */
async function labelLogprob(rm: RewardModel, steps: readonly LabelledStep[]): Promise<number> {
  const rows = await rm.lastLogits(rm.renderPrompts(steps.map((s) => s.step)))
  let total = 0
  rows.forEach((row, i) => {
    let max = -Infinity
    for (const x of row) max = Math.max(max, x)
    let sum = 0
    for (const x of row) sum += Math.exp(x - max)
    const id = steps[i]!.good ? rm.verdicts.good : rm.verdicts.bad
    total += row[id]! - max - Math.log(sum)
  })
  return total / rows.length
}

const same = (a: Record<string, Float32Array>, b: Record<string, Float32Array>) =>
  Object.keys(a).length === Object.keys(b).length &&
  Object.entries(a).every(([k, v]) => b[k] !== undefined && v.every((x, i) => x === b[k]![i]))

describe('actors/triad/reward-model on a pretrained model', () => {
  let base: PretrainedJudgeBase
  let root: string
  before(async () => {
    await useTestBackend()
    root = mkdtempSync(join(tmpdir(), 'triad-hf-rm-'))
    const dir = join(root, 'tiny-qwen3')
    await writeTinyQwen3(dir, { contextLength: 1024 })
    const { model } = await loadHfModel(dir, { contextLength: 256 })
    base = { dir, base: model, chat: loadChatFormatOf(dir, model), lora }
  })
  after(() => {
    disposeTransformer(base.base)
    rmSync(root, { recursive: true, force: true })
  })

  it("verdicts are the model's own ids for + and - (Qwen3: 10 and 12); the judge prompt is its own template's", () => {
    assert.deepEqual(verdictTokensOf(base.chat), { good: 10, bad: 12 })
    assert.deepEqual(verdictTokensOf(new Tokenizer()), { good: 0x2b, bad: 0x2d })
    assert.equal(verdictOf(10, { good: 10, bad: 12 }), 1)
    assert.equal(verdictOf(12, { good: 10, bad: 12 }), -1)
    assert.equal(verdictOf(0x2b, { good: 10, bad: 12 }), 0)
    // Qwen3's template: tool calls in its <tool_call> form, tool results as <tool_response> user turns.
    assert.equal(
      base.chat.decode(renderJudgePrompt(base.chat, step, 500)),
      '<|im_start|>system\nJudge the last step of this calc episode: + good, - bad.<|im_end|>\n' +
        '<|im_start|>system\nsys<|im_end|>\n<|im_start|>user\nmake 7<|im_end|>\n' +
        '<|im_start|>assistant\nfirst\n<tool_call>\n{"name": "add", "arguments": {"a": 3, "b": 4}}\n</tool_call><|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\nr1\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\nsecond<|im_end|>\n' +
        '<|im_start|>user\n<tool_response>\nr2\n</tool_response><|im_end|>\n' +
        '<|im_start|>assistant\n',
    )
    const ex = verdictSftExample(base.chat, labelled(2)[1]!, 500)
    assert.equal(ex.ids.at(-1), 10)
    assert.deepEqual([...ex.lossMask].indexOf(1), ex.ids.length - 1)
    assert.equal(verdictSftExample(base.chat, labelled(2)[0]!, 500).ids.at(-1), 12)
  })

  it('verdicts - a vocabulary where + or - is not one token is refused', () => {
    // A stand-in format whose encoder splits every text in two (no real tokenizer shipped here does).
    const split = { encode: () => Int32Array.of(1, 2) }
    assert.throws(
      () => verdictTokensOf(split),
      (err: Error) =>
        err instanceof ConfigError &&
        err.message ===
          `verdict="+": must encode to one token of the judge's vocabulary (it encodes to 2: [1, 2])`,
    )
  })

  it('a pretrained judge is its own adapters on the shared base: B zero judges as the base; its weights are the adapters alone', async () => {
    const rm = new RewardModel({ pretrained: base, seed: 5 })
    try {
      assert.equal(rm.format, base.chat)
      assert.equal(rm.tokenizer, undefined)
      assert.deepEqual(rm.verdicts, { good: 10, bad: 12 })
      assert.equal(rm.maxPromptTokens, 255)
      const weights = await rm.getWeights()
      assert.deepEqual(
        Object.keys(weights),
        adapterShapes(base.base.config, fullLoraConfig(lora)).map(([name]) => name),
      )
      for (const [name, v] of base.base.params)
        assert.equal(rm.model.frozen.get(name), v, `${name} is shared`)
      const prompts = rm.renderPrompts([step, labelled(1)[0]!.step])
      const [mine, theirs] = [await rm.lastLogits(prompts), await lastTokenLogits(base.base, prompts, 4096)]
      assert.deepEqual(mine, theirs)
      const j = await rm.judge([step], 3, 1)
      assert.deepEqual(
        [...j.judgements],
        [...j.tokens].map((t) => verdictOf(t, rm.verdicts)),
      )
    } finally {
      rm.dispose()
    }
    // Freeing the judge freed its adapters alone: the base still computes.
    assert.equal((await lastTokenLogits(base.base, [Int32Array.of(1, 2)], 64))[0]!.length, 151_936)
  })

  it('verdict SFT and consistency updates train the adapters alone, never the shared base', async () => {
    const frozenBefore = await weightsOf(base.base, 'params')
    const learner = new RewardModelLearner({ pretrained: base }, 0, 1e-2, switches)
    try {
      const heldOut = labelled(4)
      const logprobBefore = await labelLogprob(learner.rm, heldOut)
      const sft = await trainVerdictSft(learner.rm, labelled(16), heldOut, {
        steps: 30,
        lr: 0.1,
        batchTokens: 256,
        seed: 0,
      })
      // The labels reached the model's own verdict ids: their log-probability after held-out
      // prompts rose by nats. (A width-16 model with random 151,936-row embeddings cannot make a
      // verdict the argmax within a test's budget: the loss settles near 8.4 nats from ln V = 11.9.)
      assert.ok(sft.records[0]!.loss > 11, `first loss ${sft.records[0]!.loss}`)
      const last = sft.records.slice(-10).reduce((a, r) => a + r.loss, 0) / 10
      assert.ok(
        last < sft.records[0]!.loss - 2,
        `loss ${sft.records[0]!.loss} -> ${last} (mean of the last 10)`,
      )
      const logprobAfter = await labelLogprob(learner.rm, heldOut)
      assert.ok(logprobAfter - logprobBefore > 2, `${logprobBefore} -> ${logprobAfter}`)
      const afterSft = await learner.weights()
      const judged = await learner.rm.judge([step, step], 2, 3)
      // Two disagreeing verdicts of the model's own ids (+ then -) on a solved and a failed sample.
      const group = judgedGroup(
        [1, 0].map((reward, i) =>
          judgedSample(reward, {
            judgements: [1, -1],
            tokens: [10, 12],
            logprobs: [judged.logprobs[2 * i]!, judged.logprobs[2 * i + 1]!],
            prompt: judged.prompts[i]!,
          }),
        ),
      )
      const { trained, metrics } = await learner.step([group])
      assert.equal(trained, true)
      assert.equal(metrics['reward_model/steps_trained'], 2)
      assert.ok(!same(afterSft, await learner.weights()), 'the consistency update changed the adapters')
      assert.ok(same(frozenBefore, await weightsOf(base.base, 'params')), 'the base is unchanged')
    } finally {
      learner.rm.dispose()
    }
  })

  it("checkpoints of a pretrained judge hold its adapters in PEFT layout and load back; another kind's checkpoint is refused", async () => {
    const trained = new RewardModelLearner({ pretrained: base }, 1, 1e-2, switches)
    const fresh = new RewardModelLearner({ pretrained: base }, 1, 1e-2, switches)
    const own = new RewardModelLearner(
      {
        config: { layers: 1, width: 16, heads: 2, contextLength: 64, vocabSize: 264 },
        tokenizer: new Tokenizer(),
      },
      1,
      1e-2,
      switches,
    )
    const dir = mkdtempSync(join(tmpdir(), 'triad-hf-rmck-'))
    try {
      await trainVerdictSft(trained.rm, labelled(4), labelled(2), {
        steps: 2,
        lr: 1e-2,
        batchTokens: 256,
        seed: 0,
      })
      const weights = await trained.weights()
      await saveRewardModelCheckpoint(join(dir, 'rm'), trained)
      assert.deepEqual(readdirSync(join(dir, 'rm')).sort(), [
        'adapter_config.json',
        'adapter_model.safetensors',
        'config.json',
        'optimizer.safetensors',
        'reward-model.json',
      ])
      await loadRewardModelCheckpoint(join(dir, 'rm'), fresh)
      assert.ok(same(await fresh.weights(), weights))
      // The cold start's checkpoint too.
      const report = { steps: 2 } as Parameters<typeof saveRewardModelSft>[2]
      await saveRewardModelSft(join(dir, 'sft'), trained.rm, report)
      const other = new RewardModel({ pretrained: base, seed: 9 })
      assert.deepEqual(await loadRewardModelSft(join(dir, 'sft'), other), report)
      assert.ok(same(await other.getWeights(), weights))
      other.dispose()
      // A checkpoint of triad's own judge into a pretrained one, and back: refused, nothing changed.
      await saveRewardModelCheckpoint(join(dir, 'own'), own)
      await assert.rejects(
        loadRewardModelCheckpoint(join(dir, 'own'), fresh),
        (err: Error) =>
          err instanceof LearnerCheckpointError && /reward model config .* differs/.test(err.message),
      )
      await assert.rejects(
        loadRewardModelCheckpoint(join(dir, 'rm'), own),
        (err: Error) =>
          err instanceof LearnerCheckpointError && /reward model config .* differs/.test(err.message),
      )
      // Adapters of another rank on the same base: refused, naming the LoRA settings.
      const rank2 = new RewardModelLearner(
        { pretrained: { ...base, lora: { ...lora, rank: 2 } } },
        1,
        1e-2,
        switches,
      )
      await saveRewardModelCheckpoint(join(dir, 'rank2'), rank2)
      rank2.rm.dispose()
      await assert.rejects(
        loadRewardModelCheckpoint(join(dir, 'rank2'), fresh),
        (err: Error) =>
          err instanceof LearnerCheckpointError &&
          /reward model LoRA settings \{"rank":2,.*\} differ from the learner's \{"rank":4,/.test(
            err.message,
          ),
      )
      assert.ok(same(await fresh.weights(), weights))
    } finally {
      for (const l of [trained, fresh, own]) l.rm.dispose()
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
