import assert from 'node:assert/strict'
import { chmodSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { describe, it } from 'node:test'
import { natsServerOnPath } from '../../../actors/index.ts'

describe('actors/launcher/nats-server - natsServerOnPath', () => {
  it('natsServerOnPath - the first executable nats-server file in PATH order; folders and plain files do not count', () => {
    const root = mkdtempSync(join(tmpdir(), 'triad-path-'))
    const [empty, plain, folder, first, second] = ['empty', 'plain', 'folder', 'first', 'second'].map((d) => {
      mkdirSync(join(root, d))
      return join(root, d)
    }) as [string, string, string, string, string]
    writeFileSync(join(plain, 'nats-server'), 'not executable')
    chmodSync(join(plain, 'nats-server'), 0o644)
    mkdirSync(join(folder, 'nats-server'))
    for (const d of [first, second]) {
      writeFileSync(join(d, 'nats-server'), '#!/bin/sh\n')
      chmodSync(join(d, 'nats-server'), 0o755)
    }
    assert.equal(
      natsServerOnPath([empty, plain, folder, first, second].join(delimiter)),
      join(first, 'nats-server'),
    )
    assert.equal(natsServerOnPath([empty, plain, folder].join(delimiter)), undefined)
    assert.equal(natsServerOnPath(''), undefined)
    assert.equal(natsServerOnPath(`${delimiter}${delimiter}${second}`), join(second, 'nats-server'))
  })
})
