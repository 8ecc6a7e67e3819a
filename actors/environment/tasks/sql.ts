import Database from 'better-sqlite3'
import type { Millis } from '../../../protocols/index.ts'
import type { ExpertOptions, Policy, Task, TaskEpisode, ToolOutcome } from '../task.ts'
import { sqlExpert } from './sql-expert.ts'
import { generateSql, SQL_MAX_DIFFICULTY, SQL_SCHEMA, type SqlInstance } from './sql-instance.ts'
import { SqlPool, type SqlResult } from './sql-pool.ts'
import { submitTool } from './submit-tool.ts'

/**
 * `sql`: questions about a small company database, answered by querying it. Every episode gets a
 * fresh SQLite database (better-sqlite3) with random people, departments, salaries and hiring
 * dates; tools `execute_sql(query)` (read-only, time-limited; errors come back as tool messages)
 * and `submit(answer)`. Difficulty (1..7) sets the question kind (total, lookup, count, aggregate,
 * join) and the table size; level 1 asks for a table's row count (sizes vary per instance).
 */

/** Builds the episode's database and returns its serialized image. */
export function buildDatabase(instance: SqlInstance): Uint8Array {
  const db = new Database(':memory:')
  try {
    db.exec(
      'CREATE TABLE departments(id INTEGER PRIMARY KEY, name TEXT, city TEXT);' +
        'CREATE TABLE people(id INTEGER PRIMARY KEY, name TEXT, dept_id INTEGER REFERENCES departments(id), salary INTEGER, hired TEXT);',
    )
    const dep = db.prepare('INSERT INTO departments VALUES (?,?,?)')
    const per = db.prepare('INSERT INTO people VALUES (?,?,?,?,?)')
    db.transaction(() => {
      for (const d of instance.departments) dep.run(d.id, d.name, d.city)
      for (const p of instance.people) per.run(p.id, p.name, p.dept_id, p.salary, p.hired)
    })()
    return db.serialize()
  } finally {
    db.close()
  }
}

/** Normalizes an answer for comparison: numbers by value, text case- and space-insensitively. */
export function normalizeAnswer(v: unknown): string {
  const s = String(v ?? '')
    .trim()
    .replace(/\.$/, '')
  const n = Number(s.replace(/,/g, ''))
  if (s !== '' && Number.isFinite(n)) return String(n)
  return s.toLowerCase().replace(/\s+/g, ' ')
}

/** Formats a query result as short text: a header line, then one line per row. */
export function formatResult(r: SqlResult): string {
  if (!r.ok) return `error: ${r.error}`
  if (r.rows.length === 0) return `${r.columns.join('|')}\n(no rows)`
  const lines = r.rows.map((row) => row.map((c) => (c === null ? 'NULL' : String(c))).join('|'))
  return [r.columns.join('|'), ...lines, ...(r.truncated ? ['(more rows not shown)'] : [])].join('\n')
}

/** Whether a result holds the answer: a cell equal to it, or (count questions) that many rows. */
function holdsAnswer(instance: SqlInstance, r: SqlResult): boolean {
  if (!r.ok) return false
  const want = normalizeAnswer(instance.answer)
  if (r.rows.some((row) => row.some((c) => normalizeAnswer(c) === want))) return true
  return instance.kind === 'count' && !r.truncated && r.rows.length > 0 && String(r.rows.length) === want
}

/** Settings of the sql task. */
export interface SqlTaskOptions {
  /** The worker-thread pool holding the databases; made on first use when absent. */
  pool?: SqlPool
  /** Wall-clock limit of one query. Default 1000 ms. */
  queryTimeoutMs?: Millis
}

/** Makes an `sql` task (the registry's `sql` uses the defaults). */
export function createSqlTask(options: SqlTaskOptions = {}): Task<SqlInstance> & { pool(): SqlPool } {
  let pool = options.pool
  const getPool = () => {
    pool ??= new SqlPool()
    return pool
  }
  const timeoutMs = options.queryTimeoutMs ?? 1000
  let episodes = 0
  return {
    name: 'sql',
    description: 'questions about a random company database, answered with read-only SQL',
    tools: [
      {
        type: 'function',
        function: {
          name: 'execute_sql',
          description: 'Run one read-only SQLite query',
          parameters: {
            type: 'object',
            properties: { query: { type: 'string' } },
            required: ['query'],
            additionalProperties: false,
          },
        },
      },
      submitTool(['string', 'number']),
    ],
    limits: { maxTurns: 10, maxContextBytes: 8192, maxInvalidActions: 2 },
    difficulty: { min: 1, max: SQL_MAX_DIFFICULTY, default: 1 },
    generate: generateSql,
    key: (i) => `${i.question}|${i.people.map((p) => `${p.name}${p.dept_id}${p.salary}${p.hired}`).join()}`,
    pool: getPool,
    async open(instance): Promise<TaskEpisode> {
      const db = `db${++episodes}`
      await getPool().open(db, buildDatabase(instance))
      return {
        messages: [
          { role: 'system', content: 'Answer with SQL tools. Plan briefly before each call.' },
          { role: 'user', content: `Tables: ${SQL_SCHEMA}\n${instance.question}` },
        ],
        async call(name, args): Promise<ToolOutcome> {
          if (name === 'submit') {
            const success = normalizeAnswer(args.answer) === normalizeAnswer(instance.answer)
            return { content: success ? 'correct' : 'wrong', good: success, done: true, success }
          }
          const r = await getPool().query(db, args.query as string, timeoutMs)
          return { content: formatResult(r), good: holdsAnswer(instance, r), toolError: !r.ok }
        },
        close: () => getPool().close(db),
      }
    },
    expert: (instance: SqlInstance, options: ExpertOptions): Policy => sqlExpert(instance, options),
  }
}

/** The `sql` task with default settings. */
export const sql = createSqlTask()
