import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { basename, join } from 'node:path'
import { before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { writeTinyQwen3 } from '../support/tiny-qwen3.ts'
import { startTriad } from '../support/triad-process.ts'

const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))
/** A model directory of the repository (`models/...`) as an absolute path. */
const inRepo = (dir: string) => fileURLToPath(new URL(`../../${dir}`, import.meta.url))

/**
 * `triad run --check` of recipes that name a Hugging Face model (`model.hf`): the resolved recipe
 * with the model's sizes, or the refusal as the recipe's error, and nothing made either way.
 */
describe('triad run --check - a pretrained policy', () => {
  const root = mkdtempSync(join(tmpdir(), 'triad-run-check-hf-'))
  const model = join(root, 'tiny-qwen3')
  before(async () => {
    await writeTinyQwen3(model, { layers: 2 })
  })

  for (const [recipe, dir, repo] of [
    ['recipes/qwen3-0.6b.ts', 'models/Qwen3-0.6B', 'Qwen/Qwen3-0.6B'],
    ['recipes/qwen2.5-0.5b.ts', 'models/Qwen2.5-0.5B-Instruct', 'Qwen/Qwen2.5-0.5B-Instruct'],
  ] as const)
    it(`${recipe} without the downloaded model: one line naming the directory and how to download it; nothing made`, {
      skip: existsSync(inRepo(dir)) && `${dir} is downloaded here`,
    }, async () => {
      const runs = join(root, `runs-${basename(recipe)}`)
      const child = startTriad(['run', recipe, '--check', '--runs-dir', runs])
      assert.equal((await child.exited).code, 2)
      assert.equal(
        child.stderr(),
        `triad: invalid recipe ${recipe}: model.hf: ${dir} is not a Hugging Face model directory (missing); download the model first: huggingface-cli download ${repo} --local-dir ${dir}\n`,
      )
      assert.deepEqual(child.stdout, [])
      assert.equal(existsSync(runs), false)
    })

  it('recipes/tiny-hf.ts with TRIAD_TINY_HF_DIR: the resolved recipe takes its sizes from the model', async () => {
    const child = startTriad(['run', 'recipes/tiny-hf.ts', '--check'], { TRIAD_TINY_HF_DIR: model })
    assert.equal((await child.exited).code, 0, child.stderr())
    const recipe = JSON.parse(child.stdout.join('\n'))
    assert.equal(recipe.model.hf, model)
    assert.deepEqual([recipe.model.layers, recipe.model.width, recipe.model.heads], [2, 16, 2])
    assert.equal(recipe.model.merges, 0)
    assert.equal(recipe.derived.headDim, 8)
    // tiny-hf.ts turns the dynamic triad on: its reward model is adapters on the same base.
    assert.equal(recipe.triad.stepReward.enabled, true)
    assert.equal(recipe.triad.trainRewardModel, true)
  })

  it('refusals name their fields, all on one line; nothing made', async () => {
    const file = join(root, 'bad.ts')
    writeFileSync(
      file,
      `import { defineRecipe } from ${JSON.stringify(defineRecipePath)}\nexport default defineRecipe(${JSON.stringify(
        {
          tasks: [{ name: 'calc' }],
          model: { hf: model, lora: { rank: 4 }, width: 64 },
          sft: { threads: 2 },
        },
      )})\n`,
    )
    const runs = join(root, 'runs-b')
    const child = startTriad(['run', file, '--check', '--runs-dir', runs])
    assert.equal((await child.exited).code, 2)
    assert.equal(
      child.stderr(),
      `triad: invalid recipe ${file}: ` +
        `model.width: comes from the pretrained model (model.hf ${model}): remove it; ` +
        "sft.threads: must be 1 with model.hf: the SFT gradient threads build triad's own model and cannot load a pretrained base\n",
    )
    assert.equal(existsSync(runs), false)
  })
})
