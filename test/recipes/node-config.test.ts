import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { RunDir } from '../../actors/index.ts'
import {
  builtinTaskCatalog,
  defineRecipe,
  nodeConfigOf,
  type RecipeInput,
  resolveTasks,
} from '../../recipes/index.ts'

const dir = { id: 'r1', path: '/runs/r1' } as RunDir

describe('recipes/node-config', () => {
  it('nodeConfigOf - the SFT gets the recipe episodes per task, the token budget of a step and sft.steps', () => {
    const recipe = resolveTasks(
      defineRecipe({
        tasks: [{ name: 'calc' }],
        model: { contextLength: 256 },
        sft: { epochs: 2, batchSize: 4, expertTrajectoriesPerTask: 10, steps: 5 },
      }),
      builtinTaskCatalog(),
    )
    const c = nodeConfigOf(recipe, dir, 10)
    assert.equal(c.sft.enabled, true)
    assert.equal(c.sft.expertTrajectoriesPerTask, 10)
    assert.equal(c.sft.epochs, 2)
    assert.equal(c.sft.batchTokens, 4 * 256)
    assert.equal(c.sft.maxSteps, 5)
    assert.equal(recipe.derived.sftBatchTokens, c.sft.batchTokens)
  })

  it('nodeConfigOf - rl.offPolicy reaches the learner step config as written, none by default', () => {
    const tis = { name: 'tis', cap: 3, low: 0.25, high: 4, level: 'sequence' } as const
    const recipe = resolveTasks(
      defineRecipe({ tasks: [{ name: 'calc' }], rl: { offPolicy: tis } }),
      builtinTaskCatalog(),
    )
    assert.deepEqual(nodeConfigOf(recipe, dir, 10).rl.step.offPolicy, tis)
    const plain = resolveTasks(defineRecipe({ tasks: [{ name: 'calc' }] }), builtinTaskCatalog())
    assert.deepEqual(nodeConfigOf(plain, dir, 10).rl.step.offPolicy, {
      name: 'none',
      cap: 2,
      low: 0.5,
      high: 5,
      level: 'token',
    })
  })

  it('nodeConfigOf - the SFT runs, with the token budget of recipe.derived, on datasets alone; not without epochs or data', () => {
    const of = (sft: RecipeInput['sft']) => {
      const recipe = resolveTasks(
        defineRecipe({ tasks: [{ name: 'calc' }], model: { contextLength: 256 }, sft }),
        builtinTaskCatalog(),
      )
      return { derived: recipe.derived.sftBatchTokens, sft: nodeConfigOf(recipe, dir, 10).sft }
    }
    const datasets = of({ experts: false, batchSize: 2, datasets: [{ path: 'rows.jsonl' }] })
    assert.equal(datasets.sft.enabled, true)
    assert.equal(datasets.sft.batchTokens, 2 * 256)
    assert.equal(datasets.derived, 2 * 256)
    for (const off of [{ epochs: 0 }, { experts: false }, { expertTrajectoriesPerTask: 0 }]) {
      const c = of(off)
      assert.equal(c.sft.enabled, false, JSON.stringify(off))
      assert.equal(c.sft.batchTokens, 0, JSON.stringify(off))
      assert.equal(c.derived, 0, JSON.stringify(off))
    }
  })

  it('nodeConfigOf - without sft.steps the SFT has no step limit', () => {
    const recipe = resolveTasks(defineRecipe({ tasks: [{ name: 'calc' }] }), builtinTaskCatalog())
    assert.equal('maxSteps' in nodeConfigOf(recipe, dir, 10).sft, false)
  })
})
