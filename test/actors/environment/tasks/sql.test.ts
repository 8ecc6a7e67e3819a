import assert from 'node:assert/strict'
import { after, describe, it } from 'node:test'
import {
  buildDatabase,
  createSqlTask,
  generateSql,
  normalizeAnswer,
  SqlPool,
  TaskRng,
} from '../../../../actors/environment/index.ts'
import { mean, playMany } from './expert-check.ts'

const pool = new SqlPool({ threads: 1 })
const sql = createSqlTask({ pool, queryTimeoutMs: 300 })
after(() => pool.shutdown())

describe('actors/environment/tasks/sql', () => {
  it('sql - each kind of question has the answer its query returns', async () => {
    const kinds = new Set<string>()
    for (let d = 1; d <= 7; d++) {
      const rng = new TaskRng(d)
      for (let k = 0; k < 8; k++) {
        const i = generateSql(rng, d)
        kinds.add(i.kind)
        await pool.open('check', buildDatabase(i))
        const r = await pool.query('check', i.query, 1000)
        await pool.close('check')
        assert.ok(r.ok, JSON.stringify(r))
        assert.equal(normalizeAnswer(r.ok && r.rows[0]![0]), normalizeAnswer(i.answer), i.question)
      }
    }
    assert.deepEqual([...kinds].sort(), ['aggregate', 'count', 'join', 'lookup', 'total'])
  })

  it('sql - writes, attaches, setting changes and two statements are refused as tool errors', async () => {
    const ep = await sql.open(generateSql(new TaskRng(1), 2))
    for (const q of [
      "INSERT INTO people VALUES (99,'X',1,1,'2020-01-01')",
      'DELETE FROM people',
      'DROP TABLE people',
      'PRAGMA query_only=0',
      "ATTACH '/tmp/x.db' AS x",
      'CREATE TEMP TABLE t(x)',
    ]) {
      const r = await ep.call('execute_sql', { query: q })
      assert.equal(r.toolError, true, q)
      assert.equal(
        r.content,
        'error: the database is read-only: only queries that return rows (SELECT) are allowed',
        q,
      )
    }
    const two = await ep.call('execute_sql', { query: 'SELECT 1; DELETE FROM people' })
    assert.match(two.content, /^error: .*more than one statement/)
    const count = await ep.call('execute_sql', { query: 'SELECT COUNT(*) FROM people' })
    assert.equal(count.content, 'COUNT(*)\n8')
    await ep.close?.()
  })

  it('sql - a query that runs too long is stopped with a clear error and the database still answers', async () => {
    const ep = await sql.open(generateSql(new TaskRng(2), 2))
    const t0 = Date.now()
    const r = await ep.call('execute_sql', {
      query: 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT COUNT(*) FROM c',
    })
    assert.equal(r.content, 'error: the query ran longer than 300 ms and was stopped')
    assert.ok(Date.now() - t0 < 3000)
    const again = await ep.call('execute_sql', { query: 'SELECT COUNT(*) FROM departments' })
    assert.equal(again.content, 'COUNT(*)\n3')
    await ep.close?.()
  })

  it('sql - a bad column is an SQLite error in the tool message', async () => {
    const ep = await sql.open(generateSql(new TaskRng(3), 2))
    const r = await ep.call('execute_sql', { query: 'SELECT pay FROM people' })
    assert.deepEqual(r, { content: 'error: no such column: pay', good: false, toolError: true })
    await ep.close?.()
    assert.equal(pool.size, 0)
  })

  it('sql - expert at error rate 0 answers every question with every step good', async () => {
    const ts = await playMany(sql, 4, 0, 1, 30)
    assert.ok(ts.every((t) => t.reward === 1 && t.stepGood.every((g) => g === 1)))
  })

  it('sql - expert succeeds at its configured rate (0.7 +- 0.1 over 200 seeds) and recovers from mistakes', async () => {
    const ts = await playMany(sql, 5, 0.3, 0.7, 200)
    const rate = mean(ts.map((t) => t.reward))
    assert.ok(Math.abs(rate - 0.7) <= 0.1, `success rate ${rate}`)
    const recovered = ts.filter((t) => t.reward === 1 && t.stepGood.includes(0))
    assert.ok(recovered.length > 20, `recovered ${recovered.length}`)
    assert.equal(pool.size, 0)
  })
})
