import {
  type Millis,
  type RunCodeRequestInput,
  type RunCodeResponse,
  RunCodeResponseSchema,
  RunStatus,
  type SandboxHealth,
  SandboxHealthSchema,
} from '../protocols/index.ts'
import { SandboxHealthError, SandboxHttpError, SandboxUnreachableError } from './errors.ts'
import { SlotQueue } from './slot-queue.ts'

/** Options of the sandbox client. */
export interface SandboxClientOptions {
  /** Requests in flight at once; more wait in the client (default 16). */
  concurrency?: number
  /** Retries of a transient failure (connection refused/reset, HTTP 502/503/504, socket timeouts),
   *  and of a `SandboxError` reply when `retrySandboxErrors` (default 3). */
  retries?: number
  /** Retry replies whose status is `SandboxError` (an infrastructure failure; default true). */
  retrySandboxErrors?: boolean
  /** First backoff delay, ms; doubles each retry, with jitter (default 200). */
  backoffMs?: Millis
  /** Largest backoff delay, ms (default 5000). */
  maxBackoffMs?: Millis
  /** Extra time on top of a request's own compile and run timeouts before the client gives up, ms
   *  (queueing in the server included; default 300 000). */
  slackMs?: Millis
  /**
   * Uniform draws in [0, 1) for the backoff jitter (default `Math.random`): jitter is there to spread
   * clients' retries apart, so clients must not share one seeded sequence.
   */
  random?: () => number
  /** Time of the start-up check, ms (default 5000). */
  connectTimeoutMs?: Millis
}

const TRANSIENT_HTTP = new Set([502, 503, 504])

/**
 * A client of a SandboxFusion-compatible sandbox (triad's or SandboxFusion itself), for
 * environments and reward code. Make it with `SandboxClient.connect`, which checks the sandbox and
 * throws SandboxUnreachableError when it does not answer: training never goes on silently without
 * tools. Transient failures are retried with exponential backoff; at most `concurrency` requests
 * are in flight.
 *
 * @example
 * const sandbox = await SandboxClient.connect('http://127.0.0.1:8080')
 * const r = await sandbox.runCode({ code: 'print(1)', language: 'python' })
 * // r.status === 'Success', r.run_result.stdout === '1\n'
 */
export class SandboxClient {
  readonly url: string
  /** What the sandbox said at start (null for a SandboxFusion server without `/health`). */
  readonly health: SandboxHealth | null
  private readonly o: Required<SandboxClientOptions>
  private readonly gate: SlotQueue<number>
  private readonly random: () => number

  private constructor(url: string, health: SandboxHealth | null, o: Required<SandboxClientOptions>) {
    this.url = url
    this.health = health
    this.o = o
    this.gate = new SlotQueue(
      Array.from({ length: o.concurrency }, (_, i) => i),
      Number.POSITIVE_INFINITY,
    )
    this.random = o.random
  }

  /**
   * Connects to the sandbox at `url` and checks that it answers (`GET /health`, else SandboxFusion's
   * `GET /v1/ping`), retrying transient failures.
   * @throws SandboxUnreachableError when it does not answer as a sandbox.
   */
  static async connect(url: string, options: SandboxClientOptions = {}): Promise<SandboxClient> {
    const o: Required<SandboxClientOptions> = {
      concurrency: options.concurrency ?? 16,
      retries: options.retries ?? 3,
      retrySandboxErrors: options.retrySandboxErrors ?? true,
      backoffMs: options.backoffMs ?? 200,
      maxBackoffMs: options.maxBackoffMs ?? 5000,
      slackMs: options.slackMs ?? 300_000,
      random: options.random ?? Math.random,
      connectTimeoutMs: options.connectTimeoutMs ?? 5000,
    }
    const base = url.replace(/\/+$/, '')
    let lastError: unknown
    for (let attempt = 0; attempt <= o.retries; attempt++) {
      try {
        const res = await fetch(`${base}/health`, { signal: AbortSignal.timeout(o.connectTimeoutMs) })
        if (res.ok) {
          const health = SandboxHealthSchema.safeParse(await res.json())
          if (!health.success)
            throw new SandboxHealthError('GET /health did not answer a sandbox health object', res.status)
          return new SandboxClient(base, health.data, o)
        }
        if (res.status === 404) {
          const ping = await fetch(`${base}/v1/ping`, { signal: AbortSignal.timeout(o.connectTimeoutMs) })
          if (ping.ok && (await ping.text()).includes('pong')) return new SandboxClient(base, null, o)
        }
        throw new SandboxHealthError(`GET /health answered HTTP ${res.status}`, res.status)
      } catch (err) {
        lastError = err
        if (attempt < o.retries) await sleep(Math.min(o.backoffMs * 2 ** attempt, o.maxBackoffMs))
      }
    }
    const detail = lastError instanceof Error ? describe(lastError) : String(lastError)
    throw new SandboxUnreachableError(base, detail, { cause: lastError })
  }

  /** Requests in flight and waiting in this client. */
  load(): { running: number; queued: number } {
    return { running: this.gate.running, queued: this.gate.queued }
  }

  /**
   * Runs code (`POST /run_code`).
   * @returns the sandbox's response; `SandboxError` replies come back as such once retries are spent.
   * @throws SandboxHttpError for a refused request (4xx) or a transient failure that outlived the
   *   retries; SandboxUnreachableError when the connection fails every time.
   */
  async runCode(request: RunCodeRequestInput): Promise<RunCodeResponse> {
    const slot = await this.gate.acquire()
    try {
      return await this.withRetries(request)
    } finally {
      this.gate.release(slot)
    }
  }

  private async withRetries(request: RunCodeRequestInput): Promise<RunCodeResponse> {
    const body = JSON.stringify(request)
    const timeoutMs = ((request.compile_timeout ?? 10) + (request.run_timeout ?? 10)) * 1000 + this.o.slackMs
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= this.o.retries
      let res: Response
      try {
        res = await fetch(`${this.url}/run_code`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body,
          signal: AbortSignal.timeout(timeoutMs),
        })
      } catch (err) {
        if (last) throw new SandboxUnreachableError(this.url, describe(err as Error), { cause: err })
        await this.backoff(attempt)
        continue
      }
      const text = await res.text()
      if (res.status === 200) {
        let json: unknown
        try {
          json = JSON.parse(text)
        } catch {
          throw new SandboxHttpError(this.url, 200, `not JSON: ${text}`)
        }
        const parsed = RunCodeResponseSchema.safeParse(json)
        if (!parsed.success) throw new SandboxHttpError(this.url, 200, `not a run_code response: ${text}`)
        if (parsed.data.status === RunStatus.SandboxError && this.o.retrySandboxErrors && !last) {
          await this.backoff(attempt)
          continue
        }
        return parsed.data
      }
      if (TRANSIENT_HTTP.has(res.status) && !last) {
        await this.backoff(attempt)
        continue
      }
      throw new SandboxHttpError(this.url, res.status, text)
    }
  }

  private backoff(attempt: number): Promise<void> {
    const base = Math.min(this.o.backoffMs * 2 ** attempt, this.o.maxBackoffMs)
    return sleep(base * (0.5 + this.random() * 0.5))
  }
}

function sleep(ms: Millis): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}

/** An error with its cause's code (fetch wraps ECONNREFUSED and friends in `cause`). */
function describe(err: Error): string {
  const cause = err.cause as { code?: string; message?: string } | undefined
  return cause?.code ? `${err.message} (${cause.code}: ${cause.message ?? ''})` : err.message
}
