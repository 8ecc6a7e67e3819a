import type { TaskRng } from '../rng.ts'

/** The instances of the `sql` task (`sql.ts`) and their generator: the rows of a small company database, a question about it, its answer and the query an expert would write. */

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

/** The highest difficulty level (levels are 1 to this). */
export const SQL_MAX_DIFFICULTY = LEVELS.length
