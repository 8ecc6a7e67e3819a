import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { codeVersion, shortCodeVersion } from '../../../bin/run/code-version.ts'

describe('bin/run/code-version', () => {
  it('codeVersion - this checkout: its commit (40 hex digits), +dirty when tracked files differ', () => {
    assert.match(codeVersion(), /^[0-9a-f]{40}(\+dirty)?$/)
  })

  it('shortCodeVersion - a commit is cut to 12 hex digits, +dirty kept; other versions are as they are', () => {
    const commit = '0396462a1b2c3d4e5f60718293a4b5c6d7e8f901'
    assert.equal(shortCodeVersion(commit), '0396462a1b2c')
    assert.equal(shortCodeVersion(`${commit}+dirty`), '0396462a1b2c+dirty')
    assert.equal(shortCodeVersion('triad@0.4.0'), 'triad@0.4.0')
    assert.equal(shortCodeVersion('unknown'), 'unknown')
    assert.equal(shortCodeVersion('c0de'), 'c0de')
  })
})
