import { Svcm } from '@nats-io/services'
import {
  connect,
  type NatsConnection,
  NoRespondersError as NatsNoResponders,
  RequestError,
  type Subscription,
  TimeoutError,
} from '@nats-io/transport-node'
import { checkToken, type Envelope, encodeEnvelope } from '../../protocols/index.ts'
import { unlessAborted } from './abort.ts'
import { type Clock, sleep, systemClock } from './clock.ts'
import {
  NatsConnectError,
  NoRespondersError,
  PayloadTooLargeError,
  RequestAbortedError,
  RequestInterruptedError,
  RequestTimeoutError,
  TransportClosedError,
} from './errors.ts'
import {
  answerRequest,
  emptyServeStats,
  fitReply,
  type RequestOptions,
  readReply,
  type Served,
  type ServeOptions,
  type ServeStats,
  type SubscribeOptions,
  type Transport,
} from './transport.ts'

/** Identity of a connection; it is named `triad:<run>:<role>:<id>` so `/connz` shows who is who. */
export interface ConnectionIdentity {
  run: string
  role: string
  id: string
}

/** Options of `connectNats`. */
export interface NatsConnectOptions extends ConnectionIdentity {
  /** Server URL(s), comma separated: `nats://127.0.0.1:4222`. */
  servers: string
  /** Give up the first connection after this long, ms (default 5,000). */
  connectTimeoutMs?: number
  clock?: Clock
}

/** The connection name of an identity: `triad:<run>:<role>:<id>`. */
export function connectionName(who: ConnectionIdentity): string {
  return `triad:${checkToken(who.run, 'run id')}:${checkToken(who.role, 'role')}:${checkToken(who.id, 'id')}`
}

/**
 * How often a connection pings its server, ms. A server whose host is cut off sends no FIN, so
 * only unanswered pings show it gone: after two, within about 3 intervals, the client moves to
 * another server of the cluster (with nats.js's 10 s pings, about 30 s; docs/scaling.md).
 */
export const NATS_PING_INTERVAL_MS = 2_000

/**
 * Connects to NATS and returns a transport. It reconnects forever after the first connection;
 * requests made while disconnected are sent after the reconnect or fail at their deadline; requests
 * in flight when the connection drops fail at once with `RequestInterruptedError`. A server that
 * vanishes without closing the connection (its host cut off) is noticed by pings: one every
 * `NATS_PING_INTERVAL_MS`, the connection given up at the second unanswered one, then the next
 * server of `servers` is tried.
 * @throws NatsConnectError when no server answers the first connection.
 */
export async function connectNats(options: NatsConnectOptions): Promise<NatsTransport> {
  const name = connectionName(options)
  let nc: NatsConnection
  try {
    nc = await connect({
      servers: options.servers.split(',').map((s) => s.trim()),
      name,
      timeout: options.connectTimeoutMs ?? 5_000,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 250,
      reconnectJitter: 100,
      pingInterval: NATS_PING_INTERVAL_MS,
      maxPingOut: 2,
    })
  } catch (cause) {
    throw new NatsConnectError(options.servers, cause)
  }
  return new NatsTransport(nc, name, options.clock ?? systemClock)
}

/**
 * The replicas of a JetStream stream (or bucket) made through `nc`: 3 when its server is in a
 * cluster of three or more servers (the server's INFO lists every server's client URL in
 * `connect_urls`), else 1. A stream of 3 replicas keeps serving when any one server is taken away;
 * one of 1 replica lives on one server and stops with it (docs/scaling.md).
 */
export function streamReplicas(nc: Pick<NatsConnection, 'info'>): 1 | 3 {
  const info = nc.info
  return info?.cluster && (info.connect_urls?.length ?? 0) >= 3 ? 3 : 1
}

/** The transport over a NATS connection. `nc` is exposed for JetStream and the object store. */
export class NatsTransport implements Transport {
  readonly kind = 'nats' as const
  private readonly subs = new Set<{ stop(): Promise<void> }>()
  private closed = false
  /** Number of reconnects seen since connect. */
  reconnects = 0
  /** Rejects each request in flight; called when the connection drops. */
  private readonly interrupts = new Set<() => void>()
  /** False from a disconnect to the next reconnect. */
  private up = true
  /** Wakes the requests waiting for the reconnect. */
  private readonly wakeOnUp = new Set<() => void>()

  constructor(
    readonly nc: NatsConnection,
    readonly name: string,
    private readonly clock: Clock = systemClock,
  ) {
    void (async () => {
      for await (const s of nc.status())
        if (s.type === 'reconnect') {
          this.reconnects++
          this.up = true
          for (const wake of [...this.wakeOnUp]) wake()
        } else if (s.type === 'disconnect') {
          this.up = false
          for (const interrupt of [...this.interrupts]) interrupt()
        }
    })().catch(() => undefined)
  }

  /** The server's `max_payload` as the connection reports it, bytes (undefined before the first INFO). */
  maxPayload(): number | undefined {
    return this.nc.info?.max_payload
  }

  /** @throws PayloadTooLargeError when `bytes` is over the server's `max_payload`. */
  private checkSize(subject: string, bytes: Uint8Array): void {
    const limit = this.maxPayload()
    if (limit !== undefined && bytes.byteLength > limit)
      throw new PayloadTooLargeError(subject, bytes.byteLength, limit)
  }

  private check(): void {
    if (this.closed || this.nc.isClosed()) throw new TransportClosedError(`nats (${this.name})`)
  }

  private track(served: Served): Served {
    this.subs.add(served)
    const stop = served.stop
    return {
      ...served,
      stop: async () => {
        this.subs.delete(served)
        await stop()
      },
    }
  }

  async serve(subject: string, options: ServeOptions): Promise<Served> {
    this.check()
    const stats = emptyServeStats()
    // Every reply is sent here, and nothing of it may throw into the process: a reply over
    // max_payload goes as a short `reply_too_large` error, a reply the closed connection cannot
    // take is counted.
    const respond = (msg: Replyable) => {
      void answerRequest(msg.data, options, stats)
        .then((b) => {
          // A message's own respond does not check the connection: a closed one would drop it silently.
          if (this.nc.isClosed()) stats.repliesUnsent++
          else msg.respond(fitReply(b, this.maxPayload(), stats))
        })
        .catch(() => {
          stats.repliesUnsent++
        })
    }
    if (options.service) {
      const spec = options.service
      // Cast: @nats-io/services pins its own copy of nats-core; the connection is the same at run time.
      const service = await new Svcm(this.nc as never).add({
        name: spec.name,
        version: spec.version ?? '1.0.0',
        description: spec.description,
        metadata: spec.metadata,
        queue: options.queue ?? '',
        statsHandler: async () => ({ ...stats, ...(spec.stats?.() ?? {}) }),
      })
      service.addEndpoint(checkToken(spec.name, 'service name'), {
        subject,
        queue: options.queue ?? '',
        handler: (err, msg) => {
          if (!err) respond(msg)
        },
      })
      // Resolve once the server has the subscription: a request sent right after is delivered.
      // A flush the connection drops under rejects; the service goes too, or it would answer on
      // the subject after the reconnect with no one left to stop it.
      await this.nc.flush().catch(async (err: unknown) => {
        await service.stop().catch(() => undefined)
        throw err
      })
      return this.track({
        subject,
        stats: () => ({ ...stats }),
        stop: async () => {
          await service.stop()
        },
      })
    }
    const sub = this.nc.subscribe(subject, {
      queue: options.queue,
      callback: (err, msg) => {
        if (!err) respond(msg)
      },
    })
    await this.nc.flush().catch((err: unknown) => {
      sub.unsubscribe()
      throw err
    })
    return this.track(this.servedOf(subject, sub, stats))
  }

  private servedOf(subject: string, sub: Subscription, stats: ServeStats): Served {
    return {
      subject,
      stats: () => ({ ...stats }),
      stop: async () => {
        if (!sub.isClosed()) await sub.drain().catch(() => sub.unsubscribe())
      },
    }
  }

  subscribe(subject: string, options: SubscribeOptions): Served {
    this.check()
    const stats = emptyServeStats()
    const sub = this.nc.subscribe(subject, {
      queue: options.queue,
      callback: (err, msg) => {
        if (err) return
        let message: Envelope
        try {
          message = options.accepts.parse(msg.data)
        } catch (e) {
          stats.invalid++
          options.onInvalid?.(e as Error, msg.subject)
          return
        }
        try {
          options.handler(message, msg.subject)
          stats.handled++
        } catch {
          stats.errors++
        }
      },
    })
    return this.track(this.servedOf(subject, sub, stats))
  }

  /** @throws PayloadTooLargeError for a message over the server's `max_payload` (nothing is sent). */
  publish(subject: string, message: Envelope): void {
    this.publishBytes(subject, encodeEnvelope(message))
  }

  /** Publishes raw bytes (tests use it to send garbage). @throws PayloadTooLargeError as `publish`. */
  publishBytes(subject: string, bytes: Uint8Array): void {
    this.check()
    this.checkSize(subject, bytes)
    this.nc.publish(subject, bytes)
  }

  request(subject: string, message: Envelope, options: RequestOptions): Promise<Envelope> {
    return this.requestBytes(subject, encodeEnvelope(message), options)
  }

  /**
   * Request with raw bytes. "No responders" (nobody subscribed yet, for example just after a
   * server restart) is retried until the deadline: nobody received it, so a retry is safe.
   * A timeout is not retried: the request may have been handled. A request in flight when the
   * connection drops fails at once with `RequestInterruptedError` (a `RequestTimeoutError`): a
   * request the dying server still held is lost, and its caller would otherwise wait out its whole
   * deadline (minutes for a generation) after the server is back. One made while disconnected is
   * sent after the reconnect (a request put in the client's buffer then was seen lost), or fails
   * with `RequestTimeoutError` when the deadline comes first. An aborted `signal` ends it at
   * once with `RequestAbortedError`. A request over the server's `max_payload` fails at once with
   * `PayloadTooLargeError` (nothing is sent).
   */
  async requestBytes(subject: string, bytes: Uint8Array, options: RequestOptions): Promise<Envelope> {
    this.check()
    this.checkSize(subject, bytes)
    const { signal } = options
    const aborted = () => new RequestAbortedError(subject, signal?.reason)
    const deadline = this.clock.now() + options.timeoutMs
    let pause = 10
    let noResponders = false
    for (;;) {
      if (signal?.aborted) throw aborted()
      const left = deadline - this.clock.now()
      if (left <= 0) throw new NoRespondersError(subject)
      if (!this.up) {
        await this.untilUp(left, signal)
        if (signal?.aborted) throw aborted()
        if (!this.up) throw new RequestTimeoutError(subject, options.timeoutMs)
        continue
      }
      let interrupt: (() => void) | undefined
      const interrupted = new Promise<never>((_, reject) => {
        interrupt = () => reject(new RequestInterruptedError(subject, options.timeoutMs))
      })
      interrupted.catch(() => undefined)
      this.interrupts.add(interrupt!)
      try {
        const reply = await unlessAborted(
          Promise.race([
            this.nc.request(subject, bytes, { timeout: Math.max(1, Math.round(left)) }),
            interrupted,
          ]),
          signal,
          aborted,
        )
        return readReply(subject, reply.data, options.replies)
      } catch (err) {
        if (err instanceof RequestAbortedError || err instanceof RequestInterruptedError) throw err
        if (isNoResponders(err)) {
          if (options.retryNoResponders === false) throw new NoRespondersError(subject)
          noResponders = true
          await sleep(this.clock, Math.min(pause, Math.max(1, deadline - this.clock.now())), signal)
          pause = Math.min(pause * 2, 250)
          continue
        }
        // A retry after "no responders" that ran out of time: its timeout was only what was left of
        // the deadline (less than a round trip near the end), and nobody had answered before it.
        if (isTimeout(err) && noResponders && this.clock.now() >= deadline)
          throw new NoRespondersError(subject)
        if (isTimeout(err)) throw new RequestTimeoutError(subject, options.timeoutMs, err)
        if (this.closed || this.nc.isClosed()) throw new TransportClosedError(`nats (${this.name})`)
        throw err
      } finally {
        this.interrupts.delete(interrupt!)
      }
    }
  }

  /** Resolves at the next reconnect, after `ms`, or when `signal` aborts, whichever comes first. */
  private untilUp(ms: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer)
        this.wakeOnUp.delete(done)
        signal?.removeEventListener('abort', done)
        resolve()
      }
      const timer = this.clock.setTimeout(done, ms)
      this.wakeOnUp.add(done)
      signal?.addEventListener('abort', done, { once: true })
    })
  }

  async flush(): Promise<void> {
    this.check()
    await this.nc.flush()
  }

  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await Promise.all([...this.subs].map((s) => s.stop().catch(() => undefined)))
    if (!this.nc.isClosed()) await this.nc.drain().catch(() => this.nc.close())
  }
}

/** A received message that may be answered (core and service messages alike). */
interface Replyable {
  readonly data: Uint8Array
  respond(data: Uint8Array): boolean
}

function isNoResponders(err: unknown): boolean {
  if (err instanceof NatsNoResponders) return true
  if (err instanceof RequestError && err.isNoResponders()) return true
  return err instanceof Error && err.cause instanceof NatsNoResponders
}

function isTimeout(err: unknown): boolean {
  return err instanceof TimeoutError || (err instanceof Error && err.cause instanceof TimeoutError)
}
