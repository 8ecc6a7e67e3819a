/**
 * A parent process for the sql-pool test: opens one database in a one-process pool, starts a
 * query that never ends (its limit is 10 minutes), and prints `{"event":"busy","pids":[...]}`.
 * The test then kills this process with SIGKILL and watches the query process.
 */
import Database from 'better-sqlite3'
import { SqlPool } from '../../../../actors/environment/index.ts'

const pool = new SqlPool({ threads: 1 })
const db = new Database(':memory:')
db.exec('CREATE TABLE t(x INTEGER); INSERT INTO t VALUES (1)')
await pool.open('db', db.serialize())
void pool.query(
  'db',
  'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT COUNT(*) FROM c',
  600_000,
)
process.stdout.write(`${JSON.stringify({ event: 'busy', pids: pool.pids })}\n`)
setInterval(() => {}, 60_000)
