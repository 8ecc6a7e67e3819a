import {
  EnvAck,
  EnvCancelAll,
  EnvDrain,
  type Envelope,
  EnvHeartbeat,
  EnvList,
  EnvStart,
  EnvStarted,
  EnvWorkerLost,
  EnvWorkerStart,
  EnvWorkers,
  ErrorCode,
  encodeEnvelope,
  errorReply,
  MessageRegistry,
  type Millis,
  type PayloadOf,
  QueueGroups,
  RemoteError,
  Subjects,
} from '../../protocols/index.ts'
import {
  type ActorRef,
  type ActorSystem,
  type Behaviour,
  type Clock,
  type Exposed,
  envelope,
  exposeActor,
  type NatsTransport,
  type Served,
  type SupervisionPolicy,
  systemClock,
  type Transport,
} from '../runtime/index.ts'
import type { ContainerManager } from './container-manager.ts'
import { envWorkerAccepts } from './env-worker.ts'
import { ContainerError } from './errors.ts'
import type { TaskRegistry } from './registry.ts'
import { WorkerTable } from './worker-table.ts'

/**
 * The environment controller actor (AgentRL's central controller): workers register and heartbeat
 * (capacity, tasks, sessions); `env.start` goes to the live worker with the most free places
 * (refusals and lost workers are skipped, the next one is tried); a worker silent for three
 * intervals takes no new sessions, its sessions are reported failed (`env.worker_lost` on the
 * events subject, and an `unavailable` error reply to every later request on its subject); drain
 * and cancel-all go to the workers; containers for tasks that declare an image are made before the
 * start and removed when the session ends. Counts show in its NATS service stats.
 */

/** Settings of the controller. */
export interface EnvControllerOptions {
  run: string
  clock?: Clock
  /** How often silent workers are looked for. Default 250 ms. */
  checkMs?: Millis
  /** Missed heartbeat intervals that make a worker silent. Default 3. */
  silentAfter?: number
  /** Deadline of a start forwarded to a worker. Default 10,000 ms. */
  startTimeoutMs?: Millis
  /** Task definitions, to know which tasks need containers. */
  tasks?: TaskRegistry
  /** Makes containers for tasks that declare an image. */
  containers?: ContainerManager
  /** How the actor's crashes are handled (`SpawnOptions.supervision`); the actor system's default when absent. */
  supervision?: SupervisionPolicy
}

/** Controller counters (monotonic). */
export interface EnvControllerCounts {
  /** Starts routed to a worker that answered with a session. */
  started: number
  /** Starts refused (no worker with room, unknown task, worker errors). */
  refused: number
  /** Starts that a worker refused and that went to another worker. */
  rerouted: number
  /** Sessions reported failed because their worker went silent. */
  lost_sessions: number
  /** Workers that went silent. */
  lost_workers: number
  /** Requests in flight to a lost worker answered with an error by the controller. */
  failed_in_flight: number
}

/** How far before a lost worker's last heartbeat its requests are failed (answered twice is harmless:
 *  a caller that already has the worker's reply ignores the second). */
const IN_FLIGHT_WINDOW_MS = 5_000

interface SessionInfo {
  worker: string
  container?: string
  startedAt: Millis
}

/** What the controller's actor shares with its process: its state (for service stats) and the
 *  hook that fails requests still in flight to a lost worker. */
export interface ControllerView {
  state?: ControllerState
  /** Answers every request seen on the worker's subject since `since` with `message`; returns how many. */
  failInFlight?: (worker: string, since: Millis, message: string) => number
}

interface ControllerState {
  table: WorkerTable
  sessions: Map<string, SessionInfo>
  tombstones: Map<string, Served>
  counts: EnvControllerCounts
}

const TICK = 'env.tick'
const startReplies = new MessageRegistry([EnvStarted])
const ackReplies = new MessageRegistry([EnvAck])

/** Messages the controller's subjects accept. */
export const envControllerAccepts = new MessageRegistry([EnvStart, EnvList, EnvDrain, EnvCancelAll])

/** The controller's behaviour. `view` receives the live state (for service stats). */
export function envControllerBehaviour(
  transport: Transport,
  options: EnvControllerOptions,
  view: ControllerView,
): Behaviour<ControllerState> {
  const clock = options.clock ?? systemClock
  const timeoutMs = options.startTimeoutMs ?? 10_000

  const endSession = async (s: ControllerState, id: string) => {
    const info = s.sessions.get(id)
    s.sessions.delete(id)
    if (info?.container) await options.containers?.release(info.container)
  }

  const start = async (s: ControllerState, request: PayloadOf<typeof EnvStart>): Promise<Envelope> => {
    const spec = options.tasks?.[request.task]?.container
    if (spec && !options.containers)
      return errorReply({
        code: ErrorCode.Unavailable,
        message: `task '${request.task}' needs containers; this controller has no docker`,
      })
    const tried = new Set<string>()
    let lastError = ''
    for (;;) {
      const now = clock.now()
      const w = s.table.choose(request.task, now, tried)
      if (!w) break
      tried.add(w.beat.worker)
      w.active += 1
      w.pending += 1
      let container: { id: string; name: string } | undefined
      try {
        if (spec) container = await options.containers!.acquire(request.task, spec)
        const reply = await transport.request(
          w.beat.subject,
          EnvWorkerStart.make({ start: request, container }),
          {
            timeoutMs,
            replies: startReplies,
            retryNoResponders: false,
          },
        )
        const started = reply.payload as PayloadOf<typeof EnvStarted>
        s.sessions.set(started.session, {
          worker: w.beat.worker,
          container: container?.id,
          startedAt: clock.now(),
        })
        s.counts.started += 1
        w.pending -= 1
        return reply
      } catch (e) {
        w.pending -= 1
        w.active -= 1
        if (container) await options.containers!.release(container.id)
        if (e instanceof ContainerError) {
          s.counts.refused += 1
          return errorReply(e.toPayload())
        }
        // The worker refused for a reason of the request (unknown task, bad difficulty): answer it.
        if (e instanceof RemoteError && e.code !== ErrorCode.Unavailable) {
          s.counts.refused += 1
          return errorReply({
            code: e.code,
            message: e.message.slice(e.subject.length + 2),
            details: e.details,
          })
        }
        // Full, draining, lost or too slow: try the next worker.
        lastError = `; last worker error: ${(e as Error).message}`
        s.counts.rerouted += 1
      }
    }
    s.counts.refused += 1
    const live = s.table.liveTasks(clock.now())
    if (!live.includes(request.task))
      return errorReply({
        code: ErrorCode.NotFound,
        message: `unknown task '${request.task}'; valid tasks: ${live.join(', ') || '(no live env worker)'}`,
      })
    return errorReply({
      code: ErrorCode.Unavailable,
      message: `no live env worker has room for task '${request.task}'${lastError}`,
    })
  }

  const lose = async (
    s: ControllerState,
    worker: string,
    subject: string,
    silentMs: Millis,
    lastSeen: Millis,
  ) => {
    const lost = [...s.sessions].filter(([, i]) => i.worker === worker).map(([id]) => id)
    // Requests the worker took but never answered fail now rather than at their deadlines.
    s.counts.failed_in_flight +=
      view.failInFlight?.(
        worker,
        lastSeen - IN_FLIGHT_WINDOW_MS,
        `env worker '${worker}' was lost (no heartbeat for ${silentMs} ms); the request in flight failed`,
      ) ?? 0
    for (const id of lost) await endSession(s, id)
    s.counts.lost_sessions += lost.length
    s.counts.lost_workers += 1
    transport.publish(
      Subjects.envEvents(options.run),
      EnvWorkerLost.make({ worker, sessions: lost, silent_ms: silentMs }),
    )
    if (!s.tombstones.has(worker))
      s.tombstones.set(
        worker,
        await transport.serve(subject, {
          accepts: envWorkerAccepts,
          handler: (m) => {
            const session = (m.payload as { session?: string }).session
            return errorReply({
              code: ErrorCode.Unavailable,
              message: `env worker '${worker}' was lost (no heartbeat for ${silentMs} ms)${session ? `; session '${session}' failed` : ''}`,
              details: { worker, session },
            })
          },
        }),
      )
  }

  return {
    init: () => {
      const state: ControllerState = {
        table: new WorkerTable(options.silentAfter ?? 3, 2 * (options.checkMs ?? 250)),
        sessions: new Map(),
        tombstones: new Map(),
        counts: {
          started: 0,
          refused: 0,
          rerouted: 0,
          lost_sessions: 0,
          lost_workers: 0,
          failed_in_flight: 0,
        },
      }
      view.state = state
      return state
    },
    async receive(s, message) {
      const now = clock.now()
      switch (message.type) {
        case EnvHeartbeat.type: {
          const beat = message.payload as PayloadOf<typeof EnvHeartbeat>
          if (s.table.heartbeat(beat, now) === 'revived') {
            await s.tombstones.get(beat.worker)?.stop()
            s.tombstones.delete(beat.worker)
          }
          // Sessions the worker no longer reports have ended (a session started less than two
          // intervals ago may not be in this beat yet).
          const live = new Set(beat.sessions)
          for (const [id, info] of [...s.sessions])
            if (info.worker === beat.worker && !live.has(id) && now - info.startedAt > 2 * beat.interval_ms)
              await endSession(s, id)
          return undefined
        }
        case TICK:
          s.table.checked(now, (message.payload as { late_ms: number }).late_ms)
          for (const w of s.table.newlySilent(now))
            await lose(s, w.beat.worker, w.beat.subject, now - w.seen, w.seen)
          return undefined
        case EnvStart.type:
          return start(s, message.payload as PayloadOf<typeof EnvStart>)
        case EnvList.type:
          return EnvWorkers.make({ workers: s.table.list(now), counts: countsOf(s, options, now) })
        case EnvDrain.type: {
          const { worker } = message.payload as PayloadOf<typeof EnvDrain>
          const w = s.table.get(worker)
          if (!w)
            return errorReply({
              code: ErrorCode.NotFound,
              message: `unknown env worker '${worker}'; workers: ${s.table.ids().join(', ') || '(none)'}`,
            })
          w.beat = { ...w.beat, draining: true }
          return transport.request(w.beat.subject, message, {
            timeoutMs,
            replies: ackReplies,
            retryNoResponders: false,
          })
        }
        case EnvCancelAll.type: {
          const { worker } = message.payload as PayloadOf<typeof EnvCancelAll>
          let n = 0
          const failed: string[] = []
          for (const id of worker ? [worker] : s.table.ids()) {
            const w = s.table.get(id)
            if (!w || s.table.isSilent(w, now)) continue
            try {
              const r = await transport.request(w.beat.subject, EnvCancelAll.make({ worker: id }), {
                timeoutMs,
                replies: ackReplies,
                retryNoResponders: false,
              })
              n += (r.payload as PayloadOf<typeof EnvAck>).sessions
              for (const [sid, info] of [...s.sessions]) if (info.worker === id) await endSession(s, sid)
            } catch (e) {
              failed.push(`${id} (${(e as Error).message})`)
            }
          }
          const note = failed.length ? `; not reached: ${failed.join(', ')}` : ''
          return EnvAck.make({ message: `cancelled ${n} sessions${note}`, sessions: n })
        }
        default:
          return errorReply({
            code: ErrorCode.UnknownType,
            message: `env controller does not serve '${message.type}'`,
          })
      }
    },
    async stop(s) {
      // Each one, whatever an earlier one's stop threw: a tombstone left serving would answer its
      // worker's subject after a restart, and the worker's own replies would lose the race.
      await Promise.all([...s.tombstones.values()].map((t) => t.stop().catch(() => undefined)))
      s.tombstones.clear()
    },
  }
}

/** The numbers the controller shows: its counters, worker states, sessions, containers. */
function countsOf(s: ControllerState, options: EnvControllerOptions, now: Millis): Record<string, number> {
  const list = s.table.list(now)
  const workerSums = { expired: 0, interactions: 0 }
  for (const id of s.table.ids()) {
    const c = s.table.get(id)!.beat.counts
    workerSums.expired += c.expired
    workerSums.interactions += c.interactions
  }
  return {
    ...s.counts,
    sessions_live: s.sessions.size,
    workers_live: list.filter((w) => w.state === 'live').length,
    workers_draining: list.filter((w) => w.state === 'draining').length,
    workers_silent: list.filter((w) => w.state === 'silent').length,
    sessions_expired: workerSums.expired,
    interactions: workerSums.interactions,
    ...(options.containers?.stats() ?? {}),
  }
}

/**
 * Over NATS, the controller also listens (without answering) to every request sent to a worker,
 * keeping each request's reply subject for a few seconds, so that when the worker is lost the
 * requests it took and never answered get an error reply at once instead of timing out.
 */
function watchWorkerRequests(transport: NatsTransport, run: string, clock: Clock, view: ControllerView) {
  const recent = new Map<string, { reply: string; at: Millis }[]>()
  const prefix = Subjects.envWorker(run, 'x').slice(0, -1)
  const sub = transport.nc.subscribe(`${prefix}*`, {
    callback: (_err, msg) => {
      if (!msg.reply) return
      const worker = msg.subject.slice(prefix.length)
      const list = recent.get(worker) ?? []
      const now = clock.now()
      list.push({ reply: msg.reply, at: now })
      // Keep a window of the last few seconds (bounded).
      while (list.length > 0 && (list[0]!.at < now - 2 * IN_FLIGHT_WINDOW_MS || list.length > 50_000))
        list.shift()
      recent.set(worker, list)
    },
  })
  view.failInFlight = (worker, since, message) => {
    const list = recent.get(worker) ?? []
    recent.delete(worker)
    const bytes = encodeEnvelope(errorReply({ code: ErrorCode.Unavailable, message, details: { worker } }))
    let n = 0
    for (const r of list)
      if (r.at >= since) {
        // A connection closing under the controller must not make this throw into the process.
        try {
          transport.nc.publish(r.reply, bytes)
          n += 1
        } catch {}
      }
    return n
  }
  return sub
}

/** A running controller. */
export interface EnvController {
  readonly ref: ActorRef
  /** Current counts (as in `env.list` and the service stats). */
  counts(): Record<string, number>
  stop(): Promise<void>
}

/**
 * Starts the controller in `system`: `env.start` on `Subjects.envStart(run)` (queue group
 * `env-controller`, NATS service `env-controller` with the counts in its stats), admin requests on
 * `Subjects.envAdmin(run)`, heartbeats from `Subjects.envHeartbeat(run)`, and the silent-worker check.
 */
export async function startEnvController(
  system: ActorSystem,
  transport: Transport,
  options: EnvControllerOptions,
): Promise<EnvController> {
  const clock = options.clock ?? systemClock
  const view: ControllerView = {}
  const sniffer =
    transport.kind === 'nats'
      ? watchWorkerRequests(transport as NatsTransport, options.run, clock, view)
      : undefined
  await options.containers?.start()
  const ref = system.spawn('env-controller', envControllerBehaviour(transport, options, view), {
    concurrency: 1024,
    ...(options.supervision ? { supervision: options.supervision } : {}),
  })
  const counts = () => (view.state ? countsOf(view.state, options, clock.now()) : {})
  const exposed: Exposed[] = [
    await exposeActor(transport, ref, {
      subject: Subjects.envStart(options.run),
      queue: QueueGroups.envController,
      accepts: envControllerAccepts,
      service: {
        name: 'triad-env-controller',
        description: 'triad environment controller',
        metadata: { run: options.run },
        stats: counts,
      },
    }),
    await exposeActor(transport, ref, {
      subject: Subjects.envAdmin(options.run),
      accepts: envControllerAccepts,
      service: {
        name: 'triad-env-admin',
        description: 'triad environment controller admin',
        metadata: { run: options.run },
      },
    }),
  ]
  const beats = transport.subscribe(Subjects.envHeartbeat(options.run), {
    accepts: new MessageRegistry([EnvHeartbeat]),
    handler: (m) => {
      if (!ref.isStopped()) ref.tell(m)
    },
  })
  let timer: unknown
  let stopped = false
  const checkMs = options.checkMs ?? 250
  const tick = (due: Millis) => {
    if (stopped || ref.isStopped()) return
    // How late this check runs: time the process could not listen (see WorkerTable).
    ref.tell(envelope(TICK, { late_ms: Math.max(0, clock.now() - due) }) as Envelope)
    const next = clock.now() + checkMs
    timer = clock.setTimeout(() => tick(next), checkMs)
  }
  tick(clock.now())
  return {
    ref,
    counts,
    async stop() {
      stopped = true
      clock.clearTimeout(timer)
      await beats.stop()
      sniffer?.unsubscribe()
      for (const e of exposed) await e.stop()
      await ref.stop()
      await options.containers?.stop()
    },
  }
}
