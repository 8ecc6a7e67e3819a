import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import Docker from 'dockerode'
import { runTriad } from '../support/triad-process.ts'

const dockerUp = await new Docker()
  .ping()
  .then(() => true)
  .catch(() => false)

describe('bin/sandbox serve', () => {
  it('sandbox serve - a docker image that does not exist is one line naming it and the command that builds it, exit 1', {
    skip: dockerUp ? false : 'no Docker daemon answers',
  }, async () => {
    const r = await runTriad(['sandbox', 'serve', '--port', '0', '--image', 'triad-sandbox:no-such-image'])
    assert.equal(r.code, 1, r.stderr)
    assert.deepEqual(r.stderr.split('\n').filter(Boolean), [
      "triad: sandbox image 'triad-sandbox:no-such-image': not found; build it with 'triad sandbox image build'",
    ])
  })
})
