import type { Millis } from '../../protocols/index.ts'
import { InvariantError } from '../../protocols/index.ts'
import type { ActorRef, ActorSystem } from './actor-system.ts'
import { type Clock, sleep } from './clock.ts'
import { OnLimit, RestartTracker, type SupervisionPolicy } from './supervision.ts'

/**
 * A process's supervision tree declared as data, after Erlang/OTP's `supervisor`: a strategy,
 * a restart intensity and period, and an ordered list of child specs. `startTree` is the one
 * adapter that turns a `TreeSpec` into spawns in an `ActorSystem`, stops the children in reverse
 * start order, and answers a failed child by the strategy.
 *
 * How a failure reaches the tree: every actor a child starts is spawned with `childSupervision`
 * (no restart in place, escalate), so an actor whose `receive` throws is stopped by the actor
 * system and its escalation is the child's failure; a child whose `done` rejects has failed too.
 * The tree then restarts children by calling their `start` again (a fresh actor, its state made
 * by its `init`), after the backoff of `TreeSpec.backoff`. More than `intensity` restarts within
 * `periodMs` and the tree gives up: it stops every child and its `done` rejects with the child's
 * error (the first child failure past the intensity), so the process ends and the process supervisor above it (`actors/launcher`) restarts the
 * process.
 */

/** How a supervisor answers a failed child (OTP's restart strategies). */
export const Strategy = {
  /** Restart the failed child alone. */
  OneForOne: 'one_for_one',
  /** Stop every running child (reverse start order), then start them all again in order. */
  OneForAll: 'one_for_all',
  /** Stop the failed child and those started after it (reverse order), then start them again. */
  RestForOne: 'rest_for_one',
} as const
export type Strategy = (typeof Strategy)[keyof typeof Strategy]

/** When a child is restarted (OTP's restart types). */
export const Restart = {
  /** Always: after a failure and after a normal exit. */
  Permanent: 'permanent',
  /** After a failure only; a normal exit ends it. */
  Transient: 'transient',
  /** Never: a failed or finished child is left stopped and the others go on. */
  Temporary: 'temporary',
} as const
export type Restart = (typeof Restart)[keyof typeof Restart]

/** What a child's `start` is given. */
export interface ChildContext {
  readonly system: ActorSystem
  /** The supervision every actor of the child must be spawned with (`childSupervision`). */
  readonly supervision: SupervisionPolicy
}

/** A started child: the actors it spawned, its work when it ends by itself, and its stop. */
export interface Child {
  /** The child's actors: an escalation from one of them is the child's failure. */
  readonly actors: readonly ActorRef[]
  /**
   * Settles when the child's work ends by itself: resolves on a normal exit, rejects on a failure.
   * Absent for a child that serves until stopped.
   */
  readonly done?: Promise<void>
  /** Undoes the start (unsubscribes, stops its actors). Called once, in reverse start order. */
  stop(): Promise<void>
}

/** One child of a tree (OTP's child spec). */
export interface ChildSpec {
  /** Unique in its tree; names the child in logs and in `RunningTree.children`. */
  readonly id: string
  /**
   * Starts the child; may wait for what the child needs (the learner's first weights).
   * @throws whatever stops the child from starting: the tree's start then fails.
   */
  readonly start: (ctx: ChildContext) => Promise<Child>
  readonly restart: Restart
  /** How long the child's `stop` may take before the tree goes on without it, ms (OTP's shutdown). */
  readonly shutdownMs: Millis
  /**
   * A significant child's normal exit ends the tree (OTP's significant child under
   * `auto_shutdown: any_significant`): the tree's `done` resolves. The learner, at its step budget.
   */
  readonly significant?: boolean
}

/** A supervision tree: how it answers failures, and its children in start order. */
export interface TreeSpec {
  /** Names the tree in logs and errors (the role: `learner`, `rollout`). */
  readonly name: string
  readonly strategy: Strategy
  /** Restarts allowed within `periodMs`; one more and the tree fails (OTP's intensity). 0: the first failure fails it. */
  readonly intensity: number
  /** The sliding window over which restarts are counted, ms (OTP's period). */
  readonly periodMs: Millis
  /** Delay before restart n in the window: `min(maxMs, initialMs * factor^(n-1))`. */
  readonly backoff: SupervisionPolicy['backoff']
  /** Started in this order, stopped in the reverse order. */
  readonly children: readonly ChildSpec[]
}

/** A running tree. */
export interface RunningTree {
  /**
   * Resolves when a significant child exits normally; rejects with the failed child's error when
   * a failure exceeds the intensity (a `restartable: false` on it reaches the process supervisor).
   * Never settles for a tree that serves until stopped.
   */
  readonly done: Promise<void>
  /** The ids of the children running now, in start order. */
  children(): string[]
  /** Restarts of children since the start. */
  readonly restarts: number
  /** Stops the children in reverse start order, each within its `shutdownMs`. Idempotent. */
  stop(): Promise<void>
}

/**
 * The supervision of every actor a tree child spawns: the actor is not restarted in place, its
 * first crash escalates, and the tree decides.
 */
export const childSupervision: SupervisionPolicy = {
  maxRestarts: 0,
  withinMs: 1,
  backoff: { initialMs: 0, maxMs: 0, factor: 1 },
  onLimit: OnLimit.Escalate,
}

/** Options of `startTree`. */
export interface StartTreeOptions {
  /** Lines about restarts, stops past their shutdown and the tree's failure. */
  log?: (line: string) => void
  /** For the backoff; the system's clock when absent. */
  clock?: Clock
}

type Slot = {
  readonly spec: ChildSpec
  child?: Child
  /** Bumped at every start and stop, so that a late exit of an old incarnation is ignored. */
  generation: number
}

/**
 * Starts `spec`'s children in order. A child whose start fails stops those already started
 * (reverse order) and the start rejects with that child's error.
 * @throws the error of the first child that could not start; InvariantError on duplicate
 *   child ids.
 */
export async function startTree(
  system: ActorSystem,
  spec: TreeSpec,
  options: StartTreeOptions = {},
): Promise<RunningTree> {
  const ids = new Set<string>()
  for (const c of spec.children) {
    if (ids.has(c.id)) throw new InvariantError(`tree ${spec.name}: two children named '${c.id}'`)
    ids.add(c.id)
  }
  const log = options.log ?? (() => {})
  const clock = options.clock ?? system.clock
  const tracker = new RestartTracker({
    maxRestarts: spec.intensity,
    withinMs: spec.periodMs,
    backoff: spec.backoff,
    onLimit: OnLimit.Escalate,
  })
  const slots: Slot[] = spec.children.map((s) => ({ spec: s, generation: 0 }))
  const ctx: ChildContext = { system, supervision: childSupervision }
  let stopping = false
  /** Ends a backoff wait when the tree stops. */
  const halt = new AbortController()
  let stopped: Promise<void> | undefined
  let restarts = 0
  let settle!: { resolve: () => void; reject: (err: unknown) => void }
  const done = new Promise<void>((resolve, reject) => {
    settle = { resolve, reject }
  })
  done.catch(() => undefined)
  /** Failures and exits are handled one after another. */
  let queue = Promise.resolve()
  const enqueue = (work: () => Promise<void>) => {
    queue = queue.then(work).catch((err) => fail(err))
  }

  const stopSlot = async (slot: Slot) => {
    const child = slot.child
    if (!child) return
    slot.child = undefined
    slot.generation++
    let timer: unknown
    const inTime = await Promise.race([
      child.stop().then(
        () => true,
        (err: unknown) => {
          log(`${spec.name}/${slot.spec.id}: stop failed: ${(err as Error).message}`)
          return true
        },
      ),
      new Promise<false>((r) => {
        timer = clock.setTimeout(() => r(false), slot.spec.shutdownMs)
      }),
    ])
    clock.clearTimeout(timer)
    if (!inTime) log(`${spec.name}/${slot.spec.id}: did not stop within ${slot.spec.shutdownMs} ms; going on`)
  }

  const stopAll = async (from = 0) => {
    for (let i = slots.length - 1; i >= from; i--) await stopSlot(slots[i]!)
  }

  const startSlot = async (slot: Slot) => {
    const child = await slot.spec.start(ctx)
    const generation = ++slot.generation
    slot.child = child
    child.done?.then(
      () => enqueue(() => exited(slot, generation)),
      (err) => enqueue(() => failed(slot, generation, err)),
    )
  }

  const fail = async (err: unknown) => {
    if (stopping) return
    stopping = true
    halt.abort()
    log(`${spec.name}: giving up: ${(err as Error)?.message ?? String(err)}`)
    await stopAll()
    settle.reject(err)
  }

  const exited = async (slot: Slot, generation: number) => {
    if (stopping || generation !== slot.generation) return
    if (slot.spec.significant) {
      settle.resolve()
      return
    }
    if (slot.spec.restart === Restart.Permanent) await restart(slot, new Error('exited'))
    else await stopSlot(slot)
  }

  const failed = async (slot: Slot, generation: number, err: unknown) => {
    if (stopping || generation !== slot.generation) return
    log(`${spec.name}/${slot.spec.id}: failed: ${(err as Error)?.message ?? String(err)}`)
    if (slot.spec.restart === Restart.Temporary) return stopSlot(slot)
    await restart(slot, err)
  }

  const restart = async (slot: Slot, err: unknown) => {
    const decision = tracker.onCrash(clock.now())
    if (decision.action !== 'restart') return fail(err)
    await sleep(clock, decision.delayMs, halt.signal)
    if (stopping) return
    const at = slots.indexOf(slot)
    const affected =
      spec.strategy === Strategy.OneForOne
        ? [slot]
        : spec.strategy === Strategy.OneForAll
          ? slots.filter((s) => s.child || s === slot)
          : slots.slice(at).filter((s) => s.child || s === slot)
    for (const s of [...affected].reverse()) await stopSlot(s)
    restarts++
    log(`${spec.name}: restarting ${affected.map((s) => s.spec.id).join(', ')} (${spec.strategy})`)
    for (const s of affected) await startSlot(s)
  }

  const unsubscribe = system.onEscalate((e) => {
    const slot = slots.find((s) => s.child?.actors.some((a) => a.path === e.path))
    const actor = slot?.child?.actors.find((a) => a.path === e.path)
    if (!slot || !actor) return
    const generation = slot.generation
    // The actor system stops the escalated actor itself; act once it has, not during its stop.
    enqueue(async () => {
      await actor.stopped
      await failed(slot, generation, e.error)
    })
  })

  try {
    for (const slot of slots) await startSlot(slot)
  } catch (err) {
    stopping = true
    unsubscribe()
    await stopAll()
    throw err
  }

  return {
    done,
    children: () => slots.filter((s) => s.child).map((s) => s.spec.id),
    get restarts() {
      return restarts
    },
    stop: () => {
      stopped ??= (async () => {
        stopping = true
        halt.abort()
        await queue
        await stopAll()
        unsubscribe()
      })()
      return stopped
    },
  }
}
