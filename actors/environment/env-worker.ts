import {
  EnvAck,
  EnvCancel,
  EnvCancelAll,
  EnvDrain,
  type Envelope,
  EnvHeartbeat,
  EnvInteract,
  EnvStart,
  EnvStarted,
  EnvWorkerStart,
  errorReply,
  MessageRegistry,
  type Millis,
  type PayloadOf,
  ProtocolError,
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
  type SupervisionPolicy,
  systemClock,
  type Transport,
} from '../runtime/index.ts'
import type { ContainerExec } from './container-exec.ts'
import type { TaskRegistry } from './registry.ts'
import { SessionHost } from './session-host.ts'

/**
 * The env-worker actor: hosts sessions of its tasks and serves the function-call API on its own
 * subject (`env.start`, `env.interact`, `env.cancel`, and from the controller `env.worker_start`,
 * `env.drain`, `env.cancel_all`). It heartbeats to the controller (capacity, tasks, sessions) and
 * expires idle sessions on each beat.
 */

/** Settings of an env worker. */
export interface EnvWorkerOptions {
  run: string
  /** Unique in the run; one NATS token. */
  id: string
  tasks: TaskRegistry
  /** Most sessions at once. Default 64. */
  capacity?: number
  /** Heartbeat period. Default 1000 ms. */
  heartbeatMs?: Millis
  /** Sessions idle this long are ended. Default 600,000 ms. */
  idleTimeoutMs?: Millis
  /** Seed for instances started without `index` or `seed`. Default 0. */
  seed?: number
  clock?: Clock
  /** Runs commands in containers the controller made (tasks that declare an image). */
  containers?: ContainerExec
  /** How the actor's crashes are handled (`SpawnOptions.supervision`); the actor system's default when absent. */
  supervision?: SupervisionPolicy
}

/** Messages the worker's subject accepts. */
export const envWorkerAccepts = new MessageRegistry([
  EnvStart,
  EnvWorkerStart,
  EnvInteract,
  EnvCancel,
  EnvDrain,
  EnvCancelAll,
])

const TICK = 'env.tick'

/** The worker's behaviour: its state is a `SessionHost`. */
export function envWorkerBehaviour(
  transport: Transport,
  options: EnvWorkerOptions & { subject: string },
): Behaviour<SessionHost> {
  const clock = options.clock ?? systemClock
  const heartbeatMs = options.heartbeatMs ?? 1000
  const beat = (host: SessionHost) => {
    const s = host.stats()
    transport.publish(
      Subjects.envHeartbeat(options.run),
      EnvHeartbeat.make({
        worker: options.id,
        subject: options.subject,
        capacity: s.capacity,
        active: s.active,
        tasks: Object.keys(options.tasks),
        draining: host.isDraining(),
        sessions: host.sessionIds(),
        interval_ms: heartbeatMs,
        counts: host.counts,
      }),
    )
  }
  return {
    init: () =>
      new SessionHost({
        workerId: options.id,
        subject: options.subject,
        tasks: options.tasks,
        capacity: options.capacity ?? 64,
        idleTimeoutMs: options.idleTimeoutMs ?? 600_000,
        now: () => clock.now(),
        seed: options.seed ?? 0,
      }),
    async receive(host, message) {
      switch (message.type) {
        case TICK:
          await host.expireIdle()
          beat(host)
          return undefined
        case EnvWorkerStart.type: {
          const { start, container } = message.payload as PayloadOf<typeof EnvWorkerStart>
          try {
            const handle = container && options.containers ? options.containers.handle(container) : undefined
            return EnvStarted.make(await host.start(start, { container: handle }))
          } catch (e) {
            if (e instanceof ProtocolError) return errorReply(e.toPayload())
            throw e
          }
        }
        case EnvDrain.type:
          host.drain()
          beat(host)
          return EnvAck.make({ message: `worker ${options.id} drained`, sessions: host.stats().active })
        case EnvCancelAll.type: {
          const ids = await host.cancelAll()
          beat(host)
          return EnvAck.make({
            message: `worker ${options.id} cancelled ${ids.length} sessions`,
            sessions: ids.length,
          })
        }
        default:
          return host.handle(message)
      }
    },
    async stop(host) {
      await host.cancelAll()
    },
  }
}

/** A running env worker. */
export interface EnvWorker {
  readonly id: string
  readonly subject: string
  readonly ref: ActorRef
  readonly exposed: Exposed
  stop(): Promise<void>
}

/**
 * Starts an env worker in `system`, serves it on `Subjects.envWorker(run, id)` (a NATS service
 * `env-worker` with its session counts) and starts its heartbeat.
 */
export async function startEnvWorker(
  system: ActorSystem,
  transport: Transport,
  options: EnvWorkerOptions,
): Promise<EnvWorker> {
  const clock = options.clock ?? systemClock
  const subject = Subjects.envWorker(options.run, options.id)
  const ref = system.spawn(
    `env-worker-${options.id}`,
    envWorkerBehaviour(transport, { ...options, subject }),
    {
      concurrency: 1024,
      ...(options.supervision ? { supervision: options.supervision } : {}),
    },
  )
  const exposed = await exposeActor(transport, ref, {
    subject,
    accepts: envWorkerAccepts,
    service: {
      name: 'triad-env-worker',
      description: `triad env worker ${options.id} (${Object.keys(options.tasks).join(', ')})`,
      metadata: { worker: options.id, run: options.run },
    },
  })
  let timer: unknown
  let stopped = false
  const tick = () => {
    if (stopped || ref.isStopped()) return
    ref.tell(envelope(TICK, {}) as Envelope)
    timer = clock.setTimeout(tick, options.heartbeatMs ?? 1000)
  }
  tick()
  return {
    id: options.id,
    subject,
    ref,
    exposed,
    async stop() {
      stopped = true
      clock.clearTimeout(timer)
      await exposed.stop()
      await ref.stop()
    },
  }
}
