import type { Readable, Writable } from 'node:stream'
import { parseRunnerOutput, type RunnerJob, type RunnerResult } from './runner-job.ts'

/**
 * The host's end of a long-lived runner (`runner.py serve`): jobs go as JSON lines on the runner's
 * stdin, results come back as JSON lines on its stdout, one job at a time. When the runner's
 * stdout ends, the job in flight resolves as `{error}` and the channel is dead; a job past its
 * deadline (or whose result is larger than `maxLineBytes`) calls `kill` (the backend kills the whole
 * sandbox) and resolves as `{error}`.
 */
export class RunnerChannel {
  /** False once the runner's output has ended or the sandbox was killed. */
  alive = true
  private readonly input: Writable
  private readonly kill: () => void
  private readonly maxLineBytes: number
  private chunks: Buffer[] = []
  private bytes = 0
  private pending: ((result: RunnerResult) => void) | undefined
  private stderrTail = ''

  constructor(o: {
    input: Writable
    output: Readable
    stderr?: Readable
    kill: () => void
    maxLineBytes: number
  }) {
    this.input = o.input
    this.kill = o.kill
    this.maxLineBytes = o.maxLineBytes
    o.input.on('error', () => {})
    o.output.on('data', (b: Buffer) => this.onData(b))
    o.output.on('end', () => this.onEnd('the runner exited'))
    o.output.on('close', () => this.onEnd('the runner exited'))
    o.output.on('error', (e: Error) => this.onEnd(`the runner's output failed: ${e.message}`))
    o.stderr?.on('data', (b: Buffer) => {
      this.stderrTail = (this.stderrTail + b.toString('utf8')).slice(-2000)
    })
  }

  /** Sends one job; resolves with its result (never rejects). */
  run(job: RunnerJob, deadlineMs: number): Promise<RunnerResult> {
    if (!this.alive) return Promise.resolve({ error: 'the runner is gone' })
    if (this.pending) return Promise.resolve({ error: 'the runner is busy (one job at a time)' })
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.fail(`the sandbox ran past ${deadlineMs} ms and was killed`)
      }, deadlineMs)
      this.pending = (r) => {
        clearTimeout(timer)
        this.pending = undefined
        resolve(r)
      }
      this.input.write(`${JSON.stringify(job)}\n`)
    })
  }

  private onData(b: Buffer): void {
    let start = 0
    for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, start)) {
      this.chunks.push(b.subarray(start, i))
      const line = Buffer.concat(this.chunks).toString('utf8')
      this.chunks = []
      this.bytes = 0
      start = i + 1
      const done = this.pending
      if (done) done(parseRunnerOutput(line, this.stderrTail))
      else this.fail('the runner wrote a result nobody asked for')
    }
    if (start < b.length) {
      this.chunks.push(b.subarray(start))
      this.bytes += b.length - start
      if (this.bytes > this.maxLineBytes) this.fail(`the runner wrote more than ${this.maxLineBytes} bytes`)
    }
  }

  private onEnd(why: string): void {
    if (!this.alive) return
    this.alive = false
    this.pending?.({ error: `${why}${this.stderrTail ? `: ${this.stderrTail.slice(-500)}` : ''}` })
  }

  private fail(why: string): void {
    this.chunks = []
    this.bytes = 0
    this.alive = false
    this.kill()
    this.pending?.({ error: why })
  }
}
