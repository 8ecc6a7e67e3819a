import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { evalProcessArgs } from '../../../actors/launcher/index.ts'

describe('actors/launcher/eval-process', () => {
  it("eval-process - the triad eval of a checkpoint gets every sampling setting, so it pairs with the run's own evaluation", () => {
    const args = evalProcessArgs({
      checkpoint: '/r/eval/.step-000000-checkpoint',
      runDir: '/runs/r',
      name: 'step-000000',
      step: 0,
      title: 'sft',
      tasks: [
        { name: 'calc', difficulty: 2 },
        { name: 'maze', difficulty: 1 },
      ],
      k: 8,
      instances: 32,
      maxNewTokens: 80,
      temperature: 0.9,
      top_p: 0.95,
      seed: 4243,
    })
    assert.deepEqual(args, [
      'eval',
      '/r/eval/.step-000000-checkpoint',
      '--run',
      'r',
      '--runs-dir',
      '/runs',
      '--name',
      'step-000000',
      '--step',
      '0',
      '--title',
      'sft',
      '--tasks',
      'calc:2,maze:1',
      '--k',
      '8',
      '--instances',
      '32',
      '--max-new-tokens',
      '80',
      '--temperature',
      '0.9',
      '--top-p',
      '0.95',
      '--seed',
      '4243',
    ])
  })
})
