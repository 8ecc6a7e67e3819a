import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { before, describe, it } from 'node:test'
import {
  checkStoredRecipe,
  defineRecipe,
  parseStoredRecipe,
  type RecipeInput,
  recipeSettings,
} from '../../recipes/index.ts'
import { recipeProblems } from '../support/recipe-problems.ts'
import { writeTinyQwen3 } from '../support/tiny-qwen3.ts'

const problems = recipeProblems

/**
 * A recipe's pretrained policy (`model.hf` with `model.lora`): its defaults come from the model's
 * `config.json`, and what a run cannot do with one is refused with one line naming the field.
 */
describe('recipes/define-recipe - a pretrained policy (model.hf)', () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'triad-hf-recipe-')), 'tiny-qwen3')
  const hf = (more: Record<string, unknown> = {}, model: Record<string, unknown> = {}) =>
    ({ tasks: [{ name: 'calc' }], model: { hf: dir, lora: {}, ...model }, ...more }) as RecipeInput
  before(async () => {
    await writeTinyQwen3(dir, { layers: 2, width: 16 })
  })

  it('defineRecipe - sizes from the model, no merges, step rewards and reward-model training off', () => {
    const r = defineRecipe(hf())
    assert.equal(r.model.layers, 2)
    assert.equal(r.model.width, 16)
    assert.equal(r.model.heads, 2)
    assert.equal(r.model.merges, 0)
    assert.equal(r.derived.headDim, 8) // the model's head_dim, not width / heads
    // The adapters' defaults are written out (what --check and recipe.json show).
    assert.deepEqual(r.model.lora, {
      rank: 8,
      alpha: 16,
      targets: ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', 'up_proj', 'down_proj'],
      dropout: 0,
    })
    assert.deepEqual(defineRecipe(hf({}, { lora: { rank: 4, targets: ['v_proj'] } })).model.lora, {
      rank: 4,
      alpha: 8,
      targets: ['v_proj'],
      dropout: 0,
    })
    assert.equal(r.triad.stepReward.enabled, false)
    assert.equal(r.triad.trainRewardModel, false)
  })

  it('parseStoredRecipe - a recipe.json of a pretrained run reads back as the same recipe', () => {
    const r = defineRecipe(hf({}, { lora: { rank: 4, targets: ['q_proj'] } }))
    assert.deepEqual(parseStoredRecipe(JSON.parse(JSON.stringify(recipeSettings(r)))), r)
  })

  it('refused - model.hf without model.lora (full fine-tuning of a pretrained model)', () => {
    const { lora: _, ...model } = hf().model as Record<string, unknown>
    const lines = problems({ tasks: [{ name: 'calc' }], model })
    assert.equal(lines.length, 1, lines.join('\n'))
    assert.match(lines[0]!, /^model\.hf: needs model\.lora \(lora: \{\} for rank 8 on every projection\)/)
  })

  it('refused - model.lora without model.hf', () => {
    assert.deepEqual(problems({ tasks: [{ name: 'calc' }], model: { lora: { rank: 4 } } }), [
      "model.lora: LoRA adapters train on a pretrained model: give model.hf too (triad's own model trains every weight)",
    ])
  })

  it('refused - own-model fields beside model.hf, each named', () => {
    assert.deepEqual(problems(hf({}, { layers: 3, width: 64, heads: 2, merges: 100 })), [
      `model.layers: comes from the pretrained model (model.hf ${dir}): remove it`,
      `model.width: comes from the pretrained model (model.hf ${dir}): remove it`,
      `model.heads: comes from the pretrained model (model.hf ${dir}): remove it`,
      `model.merges: comes from the pretrained model (model.hf ${dir}): remove it`,
    ])
  })

  it("refused - own-model fields beside model.hf in a plain-object recipe (checked as a stored one), unless they hold the model's values", () => {
    assert.deepEqual(checkStoredRecipe(hf({}, { width: 64 })).issues, [
      { path: 'model.width', message: `comes from the pretrained model (model.hf ${dir}): remove it` },
    ])
    assert.deepEqual(checkStoredRecipe(hf({}, { width: 16, layers: 2, heads: 2, merges: 0 })).issues, [])
  })

  it('refused - sft.threads above 1 with model.hf', () => {
    assert.deepEqual(problems(hf({ sft: { threads: 2 } })), [
      "sft.threads: must be 1 with model.hf: the SFT gradient threads build triad's own model and cannot load a pretrained base",
    ])
  })

  it('the reward model with model.hf: off unless the recipe turns it on, then its own settings as for any recipe', () => {
    const on = defineRecipe(hf({ triad: { stepReward: { enabled: true, m: 2 } } }))
    assert.equal(on.triad.stepReward.enabled, true)
    assert.equal(on.triad.stepReward.m, 2)
    assert.equal(on.triad.trainRewardModel, false) // not given: off with model.hf
    const both = defineRecipe(hf({ triad: { stepReward: { enabled: true }, trainRewardModel: true } }))
    assert.equal(both.triad.trainRewardModel, true)
    // Training the reward model without step rewards is refused as for triad's own model.
    assert.deepEqual(problems(hf({ triad: { trainRewardModel: true } })), [
      'triad.trainRewardModel: needs triad.stepReward.enabled: the reward model learns from its step judgements',
    ])
  })

  it("refused - model.contextLength beyond the model's max_position_embeddings", () => {
    assert.deepEqual(problems(hf({}, { contextLength: 8192 })), [
      "model.contextLength: 8192 is beyond the pretrained model's max_position_embeddings (4096)",
    ])
  })

  it("refused - model.lora.rank above the model's width; the width itself is accepted", () => {
    assert.deepEqual(problems(hf({}, { lora: { rank: 17 } })), [
      "model.lora.rank: 17 is above the pretrained model's width (16): an adapter's rank is at most its projection's, so the extra rank adds weights and no capacity",
    ])
    assert.equal(defineRecipe(hf({}, { lora: { rank: 16 } })).model.lora?.rank, 16)
  })

  it('refused - a model directory that is missing says where to download it', () => {
    assert.deepEqual(problems(hf({}, { hf: 'models/Qwen3-0.6B' })), [
      'model.hf: models/Qwen3-0.6B is not a Hugging Face model directory (missing); download the model first: huggingface-cli download Qwen/Qwen3-0.6B --local-dir models/Qwen3-0.6B',
    ])
    // Another name may not be a Hub repository: no repository is made up for it.
    assert.deepEqual(problems(hf({}, { hf: 'models/my-model' })), [
      'model.hf: models/my-model is not a Hugging Face model directory (missing); download a model into it first (huggingface-cli download ORG/MODEL --local-dir models/my-model), or write a tiny random one to try the path: triad model tiny models/my-model',
    ])
    // A tiny model (recipes/tiny-hf.ts) is written by triad, not downloaded.
    assert.deepEqual(problems(hf({}, { hf: 'models/tiny-qwen3' })), [
      'model.hf: models/tiny-qwen3 is not a Hugging Face model directory (missing); write a tiny random model there first: triad model tiny models/tiny-qwen3',
    ])
  })

  it('refused - an unknown tensor backend, listing the valid ones', () => {
    assert.deepEqual(problems(hf({}, { backend: 'bogus' })), [
      'model.backend: must be one of: auto, native, tfjs-node-gpu, tfjs-node, wasm, cpu, cuda',
    ])
  })
})
