import { type Envelope, encodeEnvelope } from '../../protocols/index.ts'
import { unlessAborted } from './abort.ts'
import { type Clock, systemClock } from './clock.ts'
import {
  NoRespondersError,
  RequestAbortedError,
  RequestTimeoutError,
  TransportClosedError,
} from './errors.ts'
import { subjectMatches } from './subject-match.ts'
import {
  answerRequest,
  emptyServeStats,
  type RequestOptions,
  readReply,
  type Served,
  type ServeOptions,
  type ServeStats,
  type SubscribeOptions,
  type Transport,
} from './transport.ts'

type Entry =
  | { kind: 'serve'; pattern: string; queue?: string; options: ServeOptions; stats: ServeStats }
  | { kind: 'subscribe'; pattern: string; queue?: string; options: SubscribeOptions; stats: ServeStats }

/**
 * A transport inside one process with NATS semantics: same msgpack codec and validation, subject
 * wildcards, queue groups (round robin), no-responders. For single-process runs and tests.
 */
export class InProcessTransport implements Transport {
  readonly kind = 'in-process' as const
  private readonly entries = new Set<Entry>()
  private readonly rr = new Map<string, number>()
  private closed = false
  constructor(private readonly clock: Clock = systemClock) {}

  private add(entry: Entry, subject: string): Served {
    if (this.closed) throw new TransportClosedError(this.kind)
    this.entries.add(entry)
    return {
      subject,
      stats: () => ({ ...entry.stats }),
      stop: async () => {
        this.entries.delete(entry)
      },
    }
  }

  async serve(subject: string, options: ServeOptions): Promise<Served> {
    const stats = emptyServeStats()
    return this.add({ kind: 'serve', pattern: subject, queue: options.queue, options, stats }, subject)
  }

  subscribe(subject: string, options: SubscribeOptions): Served {
    const stats = emptyServeStats()
    return this.add({ kind: 'subscribe', pattern: subject, queue: options.queue, options, stats }, subject)
  }

  /** Picks the receivers of a message on `subject`: every plain match, one member per queue group. */
  private route(subject: string): Entry[] {
    const plain: Entry[] = []
    const groups = new Map<string, Entry[]>()
    for (const e of this.entries) {
      if (!subjectMatches(e.pattern, subject)) continue
      if (e.queue) {
        const key = `${e.pattern}|${e.queue}`
        const g = groups.get(key) ?? []
        g.push(e)
        groups.set(key, g)
      } else plain.push(e)
    }
    for (const [key, g] of groups) {
      const i = this.rr.get(key) ?? 0
      this.rr.set(key, i + 1)
      plain.push(g[i % g.length]!)
    }
    return plain
  }

  private deliver(entry: Entry, subject: string, bytes: Uint8Array): Promise<Uint8Array> | undefined {
    if (entry.kind === 'serve') return answerRequest(bytes, entry.options, entry.stats)
    try {
      const message = entry.options.accepts.parse(bytes)
      entry.stats.handled++
      entry.options.handler(message, subject)
    } catch (err) {
      entry.stats.invalid++
      entry.options.onInvalid?.(err as Error, subject)
    }
    return undefined
  }

  publish(subject: string, message: Envelope): void {
    this.publishBytes(subject, encodeEnvelope(message))
  }

  /** Publishes raw bytes (tests use it to send garbage). */
  publishBytes(subject: string, bytes: Uint8Array): void {
    if (this.closed) throw new TransportClosedError(this.kind)
    for (const e of this.route(subject)) void this.deliver(e, subject, bytes)
  }

  request(subject: string, message: Envelope, options: RequestOptions): Promise<Envelope> {
    return this.requestBytes(subject, encodeEnvelope(message), options)
  }

  /** Request with raw bytes (tests use it to send garbage). */
  async requestBytes(subject: string, bytes: Uint8Array, options: RequestOptions): Promise<Envelope> {
    if (this.closed) throw new TransportClosedError(this.kind)
    const { signal } = options
    const aborted = () => new RequestAbortedError(subject, signal?.reason)
    if (signal?.aborted) throw aborted()
    const server = this.route(subject).find((e) => e.kind === 'serve')
    if (!server) throw new NoRespondersError(subject)
    const answer = this.deliver(server, subject, bytes)!
    const reply = await new Promise<Uint8Array>((resolve, reject) => {
      const t = this.clock.setTimeout(
        () => reject(new RequestTimeoutError(subject, options.timeoutMs)),
        options.timeoutMs,
      )
      unlessAborted(answer, signal, aborted).then(
        (b) => {
          this.clock.clearTimeout(t)
          resolve(b)
        },
        (err: unknown) => {
          this.clock.clearTimeout(t)
          reject(err)
        },
      )
    })
    return readReply(subject, reply, options.replies)
  }

  async flush(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true
    this.entries.clear()
  }
}
