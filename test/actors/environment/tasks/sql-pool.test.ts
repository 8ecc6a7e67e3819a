import assert from 'node:assert/strict'
import { spawn } from 'node:child_process'
import { createInterface } from 'node:readline'
import { after, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { SqlPool } from '../../../../actors/environment/index.ts'
import { isGone, killSurvivors, type ProcStat, procStat, waitUntil } from '../../../support/process-tree.ts'

const parentScript = fileURLToPath(new URL('./sql-pool-parent.ts', import.meta.url))
const endless = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT COUNT(*) FROM c'

function database(): Uint8Array {
  const db = new Database(':memory:')
  db.exec('CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1), (2)')
  const bytes = db.serialize()
  db.close()
  return bytes
}

describe('actors/environment/tasks/sql-pool', () => {
  const pool = new SqlPool({ threads: 1 })
  after(() => pool.shutdown())

  it('sql-pool - a query past its deadline has its process killed; a new process answers the next query', async () => {
    await pool.open('db', database())
    const [pid] = pool.pids
    assert.ok(pid !== undefined)
    const before = procStat(pid)!
    const r = await pool.query('db', endless, 300)
    assert.deepEqual(r, {
      ok: false,
      error: 'the query ran longer than 300 ms and was stopped',
      timedOut: true,
    })
    await waitUntil(
      () => isGone(before),
      5_000,
      () => `query process ${pid} still runs`,
    )
    const again = await pool.query('db', 'SELECT COUNT(*) FROM t', 5_000)
    assert.deepEqual(again, { ok: true, columns: ['COUNT(*)'], rows: [[2]], truncated: false })
    assert.notEqual(pool.pids[0], pid)
  })

  it('sql-pool - a query process busy in a query ends when its parent is killed with SIGKILL', async () => {
    const parent = spawn(process.execPath, ['--import', 'tsx', parentScript], {
      stdio: ['ignore', 'pipe', 'inherit'],
    })
    const exited = new Promise((r) => parent.once('exit', r))
    const line = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error('the parent did not start its query within 30 s')),
        30_000,
      )
      parent.once('exit', () => reject(new Error('the parent exited before its query started')))
      createInterface({ input: parent.stdout! }).once('line', (l) => {
        clearTimeout(timer)
        resolve(l)
      })
    })
    const pids = (JSON.parse(line) as { pids: number[] }).pids
    assert.equal(pids.length, 1)
    const child = procStat(pids[0]!)!
    const watched: ProcStat[] = [child]
    try {
      assert.equal(child.ppid, parent.pid)
      // The query runs: the child burns CPU in native code (it cannot read its IPC channel).
      await waitUntil(
        () => (procStat(child.pid)?.utime ?? 0) > child.utime + 20,
        20_000,
        () => `query process ${child.pid} is not busy`,
      )
      parent.kill('SIGKILL')
      await exited
      await waitUntil(
        () => isGone(child),
        5_000,
        () => `query process ${child.pid} outlived its parent`,
      )
    } finally {
      killSurvivors(watched)
    }
  })
})
