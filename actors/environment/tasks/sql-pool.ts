import { type ChildProcess, spawn } from 'node:child_process'
import { createRequire } from 'node:module'
import type { Millis } from '../../../protocols/index.ts'
import { dieWithParent, OWN_PROCESS_GROUP } from '../../runtime/index.ts'
import { TaskBackendError } from '../errors.ts'

/**
 * Read-only SQLite queries with a wall-clock limit. better-sqlite3 runs a statement to its end in
 * native code and cannot interrupt it (a worker thread cannot be terminated inside it either), so
 * the databases live in child processes: a query that runs past its limit gets its process killed;
 * a new process re-opens that process's databases from their bytes and runs the queued queries. Each database is opened read-only from a
 * serialized image, and only statements that read and return rows are run (`SELECT`, `WITH`,
 * reading `PRAGMA`s); anything that writes, attaches or changes settings is refused.
 *
 * A child never outlives its parent: an idle one exits when the IPC channel closes, and a busy one
 * (a statement running in native code never reads the channel) gets SIGKILL from the kernel when
 * the parent dies (`dieWithParent`, Linux).
 */

/** The result of one query: rows (as arrays, at most `maxRows`), or an error for the policy. */
export type SqlResult =
  | { ok: true; columns: string[]; rows: unknown[][]; truncated: boolean }
  | { ok: false; error: string; timedOut?: boolean }

// The child's code is plain JavaScript run with \`node -e\` (no TypeScript loader needed).
const CHILD_SOURCE = `
const Database = require(process.argv[1])
const dbs = new Map()
const parentPort = { postMessage: (m) => process.send(m) }
process.on('disconnect', () => process.exit(0))
process.send({ ready: true })
process.on('message', (m) => {
  try {
    if (m.op === 'open') {
      const d = new Database(Buffer.from(m.bytes), { readonly: true })
      d.pragma('hard_heap_limit=268435456')
      dbs.set(m.db, d)
      parentPort.postMessage({ job: m.job, ok: true })
    } else if (m.op === 'close') {
      const d = dbs.get(m.db); if (d) d.close(); dbs.delete(m.db)
      parentPort.postMessage({ job: m.job, ok: true })
    } else {
      const d = dbs.get(m.db)
      if (!d) { parentPort.postMessage({ job: m.job, ok: false, error: 'no such database' }); return }
      const stmt = d.prepare(m.sql)
      if (!stmt.reader || !stmt.readonly) {
        parentPort.postMessage({ job: m.job, ok: false, error: 'the database is read-only: only queries that return rows (SELECT) are allowed' })
        return
      }
      stmt.raw(true)
      const columns = stmt.columns().map((c) => c.name)
      const rows = []
      let truncated = false
      for (const r of stmt.iterate()) { if (rows.length >= m.maxRows) { truncated = true; break } rows.push(r) }
      parentPort.postMessage({ job: m.job, ok: true, columns, rows, truncated })
    }
  } catch (e) {
    parentPort.postMessage({ job: m.job, ok: false, error: String(e && e.message || e) })
  }
})
`

interface Job {
  id: number
  message: Record<string, unknown>
  timeoutMs: Millis
  resolve: (r: SqlResult) => void
}

/** One child process with its queue (one job runs at a time, so its time can be limited). */
class Lane {
  worker: ChildProcess | undefined
  readonly dbs = new Map<string, Uint8Array>()
  private queue: Job[] = []
  private running: Job | undefined
  private timer: NodeJS.Timeout | undefined
  private restarts = 0
  /** The current child has loaded SQLite and answers (job timers start only then). */
  private ready = false

  constructor(private readonly sqlitePath: string) {}

  get load(): number {
    return this.dbs.size
  }

  submit(job: Job): void {
    this.queue.push(job)
    this.pump()
  }

  private spawn(): ChildProcess {
    const line = dieWithParent(process.execPath, ['-e', CHILD_SOURCE, this.sqlitePath], 'SIGKILL')
    const w = spawn(line.command, line.args, {
      ...OWN_PROCESS_GROUP,
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
      serialization: 'advanced',
    })
    this.ready = false
    w.on('message', (m: { job: number; ready?: boolean } & Record<string, unknown>) => {
      if (m.ready && this.worker === w) {
        this.ready = true
        this.pump()
      } else this.finished(m)
    })
    w.on('error', (e) => this.crashed(w, `process error: ${e.message}`))
    w.on('exit', () => this.crashed(w, 'process exited'))
    this.worker = w
    // Re-open the databases this lane holds (after a restart), ahead of anything queued.
    const opens = [...this.dbs].map(([db, bytes]) => ({ op: 'open', db, bytes }))
    for (const m of opens) w.send({ ...m, job: -1 })
    return w
  }

  private pump(): void {
    if (this.running || this.queue.length === 0) {
      if (!this.running && this.worker) this.unref(this.worker)
      return
    }
    const w = this.worker ?? this.spawn()
    this.ref(w)
    if (!this.ready) return
    const job = this.queue.shift()!
    this.running = job
    w.send({ ...job.message, job: job.id })
    this.timer = setTimeout(() => this.timedOut(job), job.timeoutMs)
  }

  private finished(m: { job: number } & Record<string, unknown>): void {
    if (m.job === -1 || !this.running || m.job !== this.running.id) return
    clearTimeout(this.timer)
    const job = this.running
    this.running = undefined
    job.resolve(
      m.ok
        ? {
            ok: true,
            columns: (m.columns as string[]) ?? [],
            rows: (m.rows as unknown[][]) ?? [],
            truncated: !!m.truncated,
          }
        : { ok: false, error: String(m.error) },
    )
    this.pump()
  }

  private timedOut(job: Job): void {
    if (this.running !== job) return
    this.running = undefined
    const w = this.worker
    this.worker = undefined
    this.restarts += 1
    w?.kill('SIGKILL')
    job.resolve({
      ok: false,
      error: `the query ran longer than ${job.timeoutMs} ms and was stopped`,
      timedOut: true,
    })
    this.pump()
  }

  // A child keeps the parent's event loop alive only while a job runs on it.
  private ref(w: ChildProcess): void {
    w.ref()
    ;(w.channel as { ref?: () => void } | undefined)?.ref?.()
  }

  private unref(w: ChildProcess): void {
    w.unref()
    ;(w.channel as { unref?: () => void } | undefined)?.unref?.()
  }

  private crashed(w: ChildProcess, why: string): void {
    if (this.worker !== w) return
    this.worker = undefined
    clearTimeout(this.timer)
    const job = this.running
    this.running = undefined
    job?.resolve({ ok: false, error: `query failed: ${why}` })
    this.pump()
  }

  async close(): Promise<void> {
    const w = this.worker
    this.worker = undefined
    for (const j of this.queue) j.resolve({ ok: false, error: 'the query pool is closed' })
    this.queue = []
    if (w && w.exitCode === null) {
      const exited = new Promise((r) => w.once('exit', r))
      w.ref()
      w.kill('SIGKILL')
      await exited
    }
  }
}

/** Settings of a pool. */
export interface SqlPoolOptions {
  /** Child processes (each holds a share of the databases). Default 2. */
  threads?: number
  /** Most rows a query returns. Default 50. */
  maxRows?: number
}

/** A pool of child processes holding read-only databases. */
export class SqlPool {
  private readonly lanes: Lane[]
  private readonly laneOf = new Map<string, Lane>()
  private nextJob = 0
  private readonly maxRows: number

  constructor(options: SqlPoolOptions = {}) {
    const sqlitePath = createRequire(import.meta.url).resolve('better-sqlite3')
    this.lanes = Array.from({ length: options.threads ?? 2 }, () => new Lane(sqlitePath))
    this.maxRows = options.maxRows ?? 50
  }

  private run(lane: Lane, message: Record<string, unknown>, timeoutMs: Millis): Promise<SqlResult> {
    return new Promise((resolve) => lane.submit({ id: this.nextJob++, message, timeoutMs, resolve }))
  }

  /**
   * Opens a database from a serialized image (`Database.serialize()`), read-only.
   * @throws TaskBackendError when the image cannot be opened.
   */
  async open(db: string, bytes: Uint8Array): Promise<void> {
    const lane = this.lanes.reduce((a, b) => (b.load < a.load ? b : a))
    lane.dbs.set(db, bytes)
    this.laneOf.set(db, lane)
    const r = await this.run(lane, { op: 'open', db, bytes }, 10_000)
    if (!r.ok) {
      lane.dbs.delete(db)
      this.laneOf.delete(db)
      throw new TaskBackendError(`cannot open database '${db}': ${r.error}`)
    }
  }

  /** Runs one read-only query with a time limit. Never throws: errors come back as results. */
  query(db: string, sql: string, timeoutMs: Millis): Promise<SqlResult> {
    const lane = this.laneOf.get(db)
    if (!lane) return Promise.resolve({ ok: false, error: `no such database '${db}'` })
    return this.run(lane, { op: 'query', db, sql, maxRows: this.maxRows }, timeoutMs)
  }

  /** Closes one database. */
  async close(db: string): Promise<void> {
    const lane = this.laneOf.get(db)
    if (!lane) return
    this.laneOf.delete(db)
    lane.dbs.delete(db)
    await this.run(lane, { op: 'close', db }, 10_000)
  }

  /** Process ids of the live child processes (for diagnostics). */
  get pids(): number[] {
    return this.lanes.flatMap((l) => (l.worker?.pid === undefined ? [] : [l.worker.pid]))
  }

  /** Number of open databases. */
  get size(): number {
    return this.laneOf.size
  }

  /** Stops every child process. */
  async shutdown(): Promise<void> {
    await Promise.all(this.lanes.map((l) => l.close()))
    this.laneOf.clear()
  }
}
