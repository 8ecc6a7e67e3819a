import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { dieWithParent } from '../../../actors/index.ts'
import { findSetpriv } from '../../../actors/testing.ts'
import { isGone, killSurvivors, procStat, waitUntil } from '../../support/process-tree.ts'

const parentDeath = fileURLToPath(new URL('../../../actors/runtime/parent-death.ts', import.meta.url))

describe('actors/runtime/parent-death', () => {
  it('dieWithParent - on Linux the command runs under setpriv --pdeathsig with the signal named', () => {
    if (process.platform !== 'linux') return
    assert.ok(findSetpriv(), 'setpriv (util-linux) is installed on Linux')
    const line = dieWithParent('nats-server', ['-p', '4222'], 'SIGKILL')
    assert.deepEqual(line.args, ['--pdeathsig', 'KILL', '--', 'nats-server', '-p', '4222'])
  })

  it('dieWithParent - a child started so gets its signal when the parent is killed with SIGKILL', async () => {
    // A parent that starts `sleep 600` and prints its pid, then waits.
    const source = `
      const { spawn } = require('node:child_process')
      import(${JSON.stringify(parentDeath)}).then(({ dieWithParent }) => {
        const line = dieWithParent('sleep', ['600'], 'SIGTERM')
        const c = spawn(line.command, line.args, { stdio: 'ignore' })
        console.log(c.pid)
        setInterval(() => {}, 60_000)
      })`
    const parent = spawn(process.execPath, ['--import', 'tsx', '-e', source], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise((r) => parent.once('exit', r))
    const pid = await new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no child pid within 20 s')), 20_000)
      createInterface({ input: parent.stdout! }).once('line', (l) => {
        clearTimeout(timer)
        resolve(Number(l))
      })
    })
    const child = procStat(pid)!
    try {
      assert.equal(child.ppid, parent.pid)
      // setpriv execs the command in the same process.
      await waitUntil(
        () => procStat(pid)?.comm === 'sleep',
        5_000,
        () => `${pid} did not become sleep`,
      )
      parent.kill('SIGKILL')
      await exited
      await waitUntil(
        () => isGone(child),
        5_000,
        () => `sleep ${pid} outlived its parent`,
      )
    } finally {
      killSurvivors([child])
    }
  })
})
