import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { firstEpisodesPerTask, playExperts } from '../../../actors/node/cold-start.ts'
import { tinyNodeConfig } from '../../support/tiny-node-config.ts'

describe('actors/node/cold-start', () => {
  it('firstEpisodesPerTask - the first episodes of each task of a larger corpus are the episodes of a smaller one', async () => {
    const config = tinyNodeConfig('cs', '/tmp/unused', {
      tasks: [
        { name: 'calc', weight: 1, difficulty: 1 },
        { name: 'maze', weight: 1, difficulty: 1 },
      ],
    })
    const corpus = await playExperts(config, 4)
    assert.equal(corpus.length, 8)
    assert.deepEqual(firstEpisodesPerTask(corpus, 4, 2), await playExperts(config, 2))
    assert.deepEqual(firstEpisodesPerTask(corpus, 4, 0), [])
    assert.deepEqual(firstEpisodesPerTask([], 0, 0), [])
    assert.throws(
      () => firstEpisodesPerTask(corpus, 4, 5),
      (e: unknown) => e instanceof RangeError && e.message === 'take (5) must be <= perTask (4)',
    )
  })
})
