import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { runDirPaths } from '../../actors/index.ts'
import { defineRecipe, RunNotAvailableError, resolveTasks, startRun } from '../../recipes/index.ts'

describe('recipes/run', () => {
  it('startRun - says clearly that the pipeline is not wired in yet', async () => {
    const recipe = resolveTasks(defineRecipe({ tasks: [{ name: 'calc' }] }))
    await assert.rejects(
      startRun(recipe, runDirPaths('/nonexistent/run'), { resume: false }),
      RunNotAvailableError,
    )
  })
})
