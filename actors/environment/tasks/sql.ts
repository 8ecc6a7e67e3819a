import Database from 'better-sqlite3'
import type { Millis } from '../../../protocols/index.ts'
import type { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy, Task, TaskEpisode, ToolOutcome } from '../task.ts'
import { sqlExpert } from './sql-expert.ts'
import { SqlPool, type SqlResult } from './sql-pool.ts'
import { submitTool } from './submit-tool.ts'

/**
 * `sql`: questions about a small company database, answered by querying it. Every episode gets a
 * fresh SQLite database (better-sqlite3) with random people, departments, salaries and hiring
 * dates; tools `execute_sql(query)` (read-only, time-limited; errors come back as tool messages)
 * and `submit(answer)`. Difficulty (1..7) sets the question kind (total, lookup, count, aggregate,
 * join) and the table size; level 1 asks for a table's row count (sizes vary per instance).
 */

/** Question kinds. Closed set. */
export const SqlQuestionKind = {
  Total: 'total',
  Lookup: 'lookup',
  Count: 'count',
  Aggregate: 'aggregate',
  Join: 'join',
} as const
export type SqlQuestionKind = (typeof SqlQuestionKind)[keyof typeof SqlQuestionKind]

export interface SqlPerson {
  id: number
  name: string
  dept_id: number
  salary: number
  hired: string
}
export interface SqlDepartment {
  id: number
  name: string
  city: string
}

/** An sql instance: the rows, the question, its answer and the query an expert would write. */
export interface SqlInstance {
  people: SqlPerson[]
  departments: SqlDepartment[]
  kind: SqlQuestionKind
  question: string
  /** The answer as text (numbers as their decimal form). */
  answer: string
  /** A query whose result holds the answer. */
  query: string
}

/** Per level: question kinds drawn from, rows in `people` and `departments` (a number or a `[min, max]` range). */
type Rows = number | readonly [number, number]
const LEVELS: readonly { kinds: SqlQuestionKind[]; people: Rows; departments: Rows }[] = [
  { kinds: ['total'], people: [3, 16], departments: [2, 8] },
  { kinds: ['lookup'], people: 8, departments: 3 },
  { kinds: ['count'], people: 12, departments: 3 },
  { kinds: ['aggregate'], people: 16, departments: 4 },
  { kinds: ['join'], people: 24, departments: 4 },
  { kinds: ['count', 'aggregate', 'join'], people: 64, departments: 6 },
  { kinds: ['lookup', 'count', 'aggregate', 'join'], people: 200, departments: 8 },
]

const FIRST = [
  'Ann',
  'Bo',
  'Cy',
  'Di',
  'Ed',
  'Flo',
  'Gus',
  'Ivy',
  'Jo',
  'Kim',
  'Lu',
  'Max',
  'Ned',
  'Ola',
  'Pia',
  'Rex',
]
const LAST = [
  'Lee',
  'Kim',
  'Roy',
  'Fox',
  'Day',
  'Ng',
  'Cox',
  'Orr',
  'Poe',
  'Wu',
  'Ash',
  'Bay',
  'Cole',
  'Dunn',
]
const DEPTS = ['Sales', 'Legal', 'Ops', 'Tech', 'Design', 'Support', 'Finance', 'HR']
const CITIES = ['Oslo', 'Lima', 'Rome', 'Kyiv', 'Pune', 'Doha', 'Baku', 'Riga']

/** The schema line shown to the policy. */
export const SQL_SCHEMA = 'people(id,name,dept_id,salary,hired) departments(id,name,city)'

const q = (s: string) => `'${s.replace(/'/g, "''")}'`

/** Generates an sql instance. */
export function generateSql(rng: TaskRng, difficulty: number): SqlInstance {
  const level = LEVELS[difficulty - 1]!
  const rows = (n: Rows) => (typeof n === 'number' ? n : rng.int(n[0], n[1]))
  const departmentCount = rows(level.departments)
  const peopleCount = rows(level.people)
  const cities = rng.shuffle(CITIES)
  const departments = rng
    .shuffle(DEPTS)
    .slice(0, departmentCount)
    .map((name, i) => ({ id: i + 1, name, city: cities[i]! }))
  const names = rng.shuffle(FIRST.flatMap((f) => LAST.map((l) => `${f} ${l}`))).slice(0, peopleCount)
  const people = names.map((name, i) => ({
    id: i + 1,
    name,
    dept_id: rng.int(1, departments.length),
    salary: rng.int(30, 150) * 1000,
    hired: `${rng.int(2015, 2024)}-${String(rng.int(1, 12)).padStart(2, '0')}-${String(rng.int(1, 28)).padStart(2, '0')}`,
  }))
  const kind = rng.pick(level.kinds)
  const p = rng.pick(people)
  const d = rng.pick(departments.filter((x) => people.some((y) => y.dept_id === x.id)))
  const year = rng.int(2016, 2023)
  let question: string
  let answer: string
  let query: string
  if (kind === 'total') {
    // Sizes vary per instance so the answer must be read from the database.
    const table = rng.chance(0.5) ? 'people' : 'departments'
    question = `How many rows does ${table} have?`
    answer = String(table === 'people' ? people.length : departments.length)
    query = `SELECT COUNT(*) FROM ${table}`
  } else if (kind === 'lookup') {
    if (rng.chance(0.5)) {
      question = `What is ${p.name}'s salary?`
      answer = String(p.salary)
      query = `SELECT salary FROM people WHERE name=${q(p.name)}`
    } else {
      question = `When was ${p.name} hired?`
      answer = p.hired
      query = `SELECT hired FROM people WHERE name=${q(p.name)}`
    }
  } else if (kind === 'count') {
    const s = rng.int(5, 13) * 10000
    if (rng.chance(0.5)) {
      question = `How many people earn more than ${s}?`
      answer = String(people.filter((x) => x.salary > s).length)
      query = `SELECT COUNT(*) FROM people WHERE salary>${s}`
    } else {
      question = `How many people were hired in ${year}?`
      answer = String(people.filter((x) => x.hired.startsWith(String(year))).length)
      query = `SELECT COUNT(*) FROM people WHERE hired LIKE '${year}%'`
    }
  } else if (kind === 'aggregate') {
    const [fn, word] = rng.pick([
      ['MAX', 'highest'],
      ['MIN', 'lowest'],
      ['SUM', 'total'],
    ] as const)
    const ids = people.filter((x) => x.dept_id === d.id).map((x) => x.salary)
    const v =
      fn === 'MAX' ? Math.max(...ids) : fn === 'MIN' ? Math.min(...ids) : ids.reduce((a, b) => a + b, 0)
    question = `What is the ${word} salary in dept_id ${d.id}?`
    answer = String(v)
    query = `SELECT ${fn}(salary) FROM people WHERE dept_id=${d.id}`
  } else {
    const variant = rng.int(0, 2)
    if (variant === 0) {
      question = `In which city does ${p.name} work?`
      answer = departments.find((x) => x.id === p.dept_id)!.city
      query = `SELECT d.city FROM people p JOIN departments d ON p.dept_id=d.id WHERE p.name=${q(p.name)}`
    } else if (variant === 1) {
      question = `How many people work in ${d.name}?`
      answer = String(people.filter((x) => x.dept_id === d.id).length)
      query = `SELECT COUNT(*) FROM people p JOIN departments d ON p.dept_id=d.id WHERE d.name=${q(d.name)}`
    } else {
      question = `What is the highest salary in ${d.city}?`
      const ids = people.filter((x) => x.dept_id === d.id).map((x) => x.salary)
      answer = String(Math.max(...ids))
      query = `SELECT MAX(p.salary) FROM people p JOIN departments d ON p.dept_id=d.id WHERE d.city=${q(d.city)}`
    }
  }
  return { people, departments, kind, question, answer, query }
}

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
    difficulty: { min: 1, max: LEVELS.length, default: 1 },
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
