/**
 * The only module of triad that touches nact. nact 7.6.2 is unmaintained and has sharp edges (see
 * docs/design.md#actors-and-supervision); this wrapper gives the rest of the code a small typed
 * surface instead: behaviours as data, supervision as data, `ask` with a deadline, and counted
 * stats.
 *
 * Each process hosts one `ActorSystem`; its nact tree is `root -> node -> <actors>`. An actor's
 * crash is decided by its `SupervisionPolicy` through nact's `onCrash`: restart after backoff
 * (nact `reset`, which re-makes the state), stop, or escalate to the node, which stops the child
 * and reports the failure to the system's `onEscalate` listener (the process-level supervisor).
 */
import nact from 'nact'
import type { Envelope, Millis } from '../../protocols/index.ts'
import { InvariantError } from '../../protocols/index.ts'
import { type Clock, sleep, systemClock } from './clock.ts'
import { ActorCrashedError, ActorStoppedError, ActorTimeoutError } from './errors.ts'
import { defaultSupervision, OnLimit, RestartTracker, type SupervisionPolicy } from './supervision.ts'

/** What an actor sees of itself while handling a message. */
export interface ActorContext {
  /** The actor's name (unique under its parent). */
  readonly name: string
  /** `/<system>/node/<name>`. */
  readonly path: string
  readonly clock: Clock
  /** A reference to this actor (to `tell` itself, for example from a timer). */
  readonly self: ActorRef
}

/**
 * An actor's behaviour. `init` makes a mutable state object at start and after every restart;
 * `receive` handles one message and returns the reply for an `ask` (or nothing).
 * Validation problems are replies; anything thrown is a crash, and supervision decides.
 */
export interface Behaviour<S> {
  init(ctx: ActorContext): S | Promise<S>
  receive(
    state: S,
    message: Envelope,
    ctx: ActorContext,
  ): Promise<Envelope | undefined> | Envelope | undefined
  /** Called once when the actor stops or before a restart discards the state. */
  stop?(state: S): Promise<void> | void
}

/** Counters of one actor since it was spawned (restarts included). */
export interface ActorStats {
  /** Messages whose `receive` completed without throwing. */
  handled: number
  /** Messages whose `receive` threw (crashes). */
  errors: number
  /** Restarts granted by the supervision policy. */
  restarts: number
}

/** Options of `spawn`. */
export interface SpawnOptions {
  /** How crashes are handled; `defaultSupervision` when absent. */
  supervision?: SupervisionPolicy
  /**
   * How many messages `receive` may handle at once. 1 (default): strictly one after another.
   * More: for actors whose handlers wait on I/O; they share one state object.
   */
  concurrency?: number
}

/** A handle on a live (or stopped) actor. */
export interface ActorRef {
  readonly name: string
  readonly path: string
  /**
   * Sends `message` and resolves with the reply. The message still runs if the deadline passes.
   * @throws ActorTimeoutError after `timeoutMs`; ActorStoppedError when the actor is or becomes
   *   stopped; ActorCrashedError when `receive` threw on this message; an Error when it replied nothing.
   */
  ask(message: Envelope, timeoutMs: Millis): Promise<Envelope>
  /** Sends `message` without waiting for a reply. @throws ActorStoppedError when stopped. */
  tell(message: Envelope): void
  stats(): ActorStats
  /** True once stopped (by `stop`, by the supervision limit, or by escalation). */
  isStopped(): boolean
  /** Resolves when the actor has stopped. */
  readonly stopped: Promise<void>
  /** Stops the actor; pending asks fail with `ActorStoppedError`. */
  stop(): Promise<void>
}

/**
 * A typed registered name, after OTP's registered names: under it a child of a supervision tree
 * registers the handle its siblings use (`ActorSystem.register`), and a sibling looks the handle up
 * (`ActorSystem.whereis`), instead of the children sharing a mutable object. `T` is the handle's
 * type; the name is unique in its actor system.
 */
export interface RegisteredName<T> {
  readonly name: string
  /** Never set: carries `T` for the compiler only. */
  readonly handle?: T
}

/** The registered name `name` of handles of type `T`. */
export function registeredName<T>(name: string): RegisteredName<T> {
  return { name }
}

/** An escalated failure: a child exceeded its restart limit with `onLimit: 'escalate'`. */
export interface Escalation {
  path: string
  error: unknown
}

/** A message waiting in an actor's mailbox, with the callbacks of its `ask`. */
type Letter = {
  message: Envelope
  resolve?: (reply: Envelope | undefined) => void
  reject?: (err: unknown) => void
}

/**
 * What nact's mailbox carries: only crashes. Letters are handled by the actor's own loop (nact
 * spends one event-loop turn per message, which halves request/reply throughput over NATS);
 * a crash is dispatched to nact and thrown inside its actor, so nact's `onCrash` (our supervision
 * adapter) decides: reset after backoff, stop, or escalate.
 */
type Signal = { crash: unknown }

type Holder<S> = { state?: S; initializing?: Promise<S> }

// biome-ignore lint/suspicious/noExplicitAny: nact's references are untyped at this boundary.
type NactRef = any

/** One process's actor system. */
export class ActorSystem {
  readonly name: string
  readonly clock: Clock
  private readonly root: NactRef
  private readonly node: NactRef
  private readonly refs = new Map<string, ActorRef>()
  /** Handles by registered name (`register`); a separate namespace from the actors' names. */
  private readonly registered = new Map<string, unknown>()
  private readonly escalationListeners: ((e: Escalation) => void)[] = []

  constructor(options: { name?: string; clock?: Clock } = {}) {
    this.name = options.name ?? 'triad'
    this.clock = options.clock ?? systemClock
    // nact reads `{name}` although its types say a string.
    this.root = nact.start({
      name: `${this.name}-${process.pid}-${Math.random().toString(36).slice(2, 8)}`,
    } as never)
    this.node = nact.spawn(this.root, (state: unknown) => state, 'node', {
      // A child's escalation arrives here with `child` set: stop the child (never `resume`: a
      // child that escalates to a parent that resumes stays busy forever) and report it.
      // biome-ignore lint/suspicious/noExplicitAny: nact's supervision context is untyped.
      onCrash: (_msg: unknown, error: unknown, ctx: any, child: NactRef) => {
        const path = child ? `/${this.name}/node/${child.name}` : `/${this.name}/node`
        for (const l of this.escalationListeners) l({ path, error })
        return child ? ctx.stopChild : ctx.resume
      },
    })
  }

  /**
   * Registers a listener for failures escalated past an actor's restart limit.
   * @returns a function that removes the listener.
   */
  onEscalate(listener: (e: Escalation) => void): () => void {
    this.escalationListeners.push(listener)
    return () => {
      const at = this.escalationListeners.indexOf(listener)
      if (at >= 0) this.escalationListeners.splice(at, 1)
    }
  }

  /** The live actor named `name`, if any. */
  find(name: string): ActorRef | undefined {
    return this.refs.get(name)
  }

  /**
   * Registers `handle` under `name` (replacing one registered before: the newest start of a child
   * wins, as a restarted actor takes its name again).
   * @returns the unregistration, for the registering child's stop: it removes the name only while
   *   it still holds this `handle`.
   */
  register<T>(name: RegisteredName<T>, handle: T): () => void {
    this.registered.set(name.name, handle)
    return () => {
      if (this.registered.get(name.name) === handle) this.registered.delete(name.name)
    }
  }

  /** The handle registered under `name`, if any (undefined while its child is not running). */
  whereis<T>(name: RegisteredName<T>): T | undefined {
    // `register` is the only writer, and it stores under a name of the same `T`.
    return this.registered.get(name.name) as T | undefined
  }

  /**
   * Spawns an actor under the node.
   * @throws InvariantError when an actor of that name is alive; SupervisionPolicyError for
   *   a `supervision` policy out of range.
   */
  spawn<S>(name: string, behaviour: Behaviour<S>, options: SpawnOptions = {}): ActorRef {
    const existing = this.refs.get(name)
    if (existing && !existing.isStopped())
      throw new InvariantError(`an actor named '${name}' is already running`)
    const concurrency = Math.max(1, Math.floor(options.concurrency ?? 1))
    const tracker = new RestartTracker(options.supervision ?? defaultSupervision)
    const clock = this.clock
    const path = `/${this.name}/node/${name}`
    const stats: ActorStats = { handled: 0, errors: 0, restarts: 0 }
    let stoppedFlag = false
    let markStopped!: () => void
    const stopped = new Promise<void>((r) => {
      markStopped = r
    })
    /** The state holder of the current incarnation; nact's reset makes a new one. */
    let current: Holder<S> = {}
    const mailbox: Letter[] = []
    /** Rejections of asks not yet answered, run if the actor stops first. */
    const pendingAsks = new Set<() => void>()
    /** True while the drain loop runs; false when idle. */
    let running = false
    /** True from a crash until the supervisor has restarted (or stopped) the actor. */
    let suspended = false
    let inFlight = 0
    const slotWaiters: (() => void)[] = []
    let actor: NactRef
    let ref: ActorRef

    const ctx: ActorContext = {
      name,
      path,
      clock,
      get self() {
        return ref
      },
    }

    const ensureState = async (holder: Holder<S>): Promise<S> => {
      if (holder.state !== undefined) return holder.state
      holder.initializing ??= Promise.resolve(behaviour.init(ctx)).then((s) => {
        holder.state = s
        return s
      })
      return holder.initializing
    }

    /** Hands a failure to nact, whose onCrash runs the supervision policy. */
    const crash = (err: unknown) => {
      if (stoppedFlag || suspended) return
      suspended = true
      nact.dispatch(actor, { crash: err } satisfies Signal)
    }

    const drain = async () => {
      try {
        const state = await ensureState(current)
        while (mailbox.length > 0 && !suspended && !stoppedFlag) {
          const letter = mailbox.shift()!
          if (concurrency === 1) {
            let reply: Envelope | undefined
            try {
              reply = await behaviour.receive(state, letter.message, ctx)
            } catch (err) {
              stats.errors++
              letter.reject?.(new ActorCrashedError(path, letter.message.type, err))
              crash(err)
              break
            }
            stats.handled++
            letter.resolve?.(reply)
            continue
          }
          while (inFlight >= concurrency) await new Promise<void>((r) => slotWaiters.push(r))
          inFlight++
          const message = letter.message
          Promise.resolve()
            .then(() => behaviour.receive(state, message, ctx))
            .then(
              (reply) => {
                stats.handled++
                letter.resolve?.(reply)
              },
              (err) => {
                stats.errors++
                letter.reject?.(new ActorCrashedError(path, message.type, err))
                crash(err)
              },
            )
            .finally(() => {
              inFlight--
              slotWaiters.shift()?.()
            })
        }
      } catch (err) {
        // `init` failed: a crash like any other.
        crash(err)
      } finally {
        running = false
      }
      if (mailbox.length > 0) scheduleDrain()
    }

    const scheduleDrain = () => {
      if (running || suspended || stoppedFlag) return
      running = true
      queueMicrotask(() => void drain())
    }

    const post = (letter: Letter) => {
      mailbox.push(letter)
      scheduleDrain()
    }

    const finish = async () => {
      stoppedFlag = true
      for (const onStop of pendingAsks) onStop()
      pendingAsks.clear()
      for (const letter of mailbox.splice(0))
        letter.reject?.(new ActorStoppedError(path, 'stopped before handling'))
      const s = current.state
      if (s !== undefined) await behaviour.stop?.(s)
      if (this.refs.get(name) === ref) this.refs.delete(name)
      markStopped()
    }

    actor = nact.spawn(
      this.node,
      (_holder: Holder<S>, signal: Signal): Holder<S> => {
        throw signal.crash
      },
      name,
      {
        initialStateFunc: () => {
          current = {}
          return current
        },
        // biome-ignore lint/suspicious/noExplicitAny: nact's supervision context is untyped.
        onCrash: async (_msg: unknown, _error: unknown, nctx: any) => {
          const decision = tracker.onCrash(clock.now())
          if (decision.action === 'restart') {
            const old = current.state
            if (old !== undefined) await Promise.resolve(behaviour.stop?.(old)).catch(() => undefined)
            await sleep(clock, decision.delayMs)
            stats.restarts++
            // nact's reset runs when this returns and makes a new holder; then make the new state
            // and go on with the letters that waited.
            setImmediate(() => {
              suspended = false
              scheduleDrain()
            })
            return nctx.reset
          }
          return decision.action === OnLimit.Escalate ? nctx.escalate : nctx.stop
        },
        afterStop: () => finish(),
      },
    )

    ref = {
      name,
      path,
      stopped,
      stats: () => ({ ...stats }),
      isStopped: () => stoppedFlag,
      tell: (message) => {
        if (stoppedFlag) throw new ActorStoppedError(path)
        post({ message })
      },
      ask: (message, timeoutMs) =>
        new Promise<Envelope>((resolve, reject) => {
          if (stoppedFlag) return reject(new ActorStoppedError(path))
          const timer = clock.setTimeout(() => {
            pendingAsks.delete(onStop)
            reject(new ActorTimeoutError(path, message.type, timeoutMs))
          }, timeoutMs)
          const onStop = () => reject(new ActorStoppedError(path, 'stopped before answering'))
          pendingAsks.add(onStop)
          const done = () => {
            clock.clearTimeout(timer)
            pendingAsks.delete(onStop)
          }
          post({
            message,
            resolve: (reply) => {
              done()
              if (reply === undefined) reject(new Error(`actor ${path} gave no reply to '${message.type}'`))
              else resolve(reply)
            },
            reject: (err) => {
              done()
              reject(err)
            },
          })
        }),
      stop: async () => {
        if (!stoppedFlag) nact.stop(actor)
        await stopped
      },
    }
    this.refs.set(name, ref)
    scheduleDrain()
    return ref
  }

  /** Stops every actor and the nact system. */
  async stop(): Promise<void> {
    const all = [...this.refs.values()]
    await Promise.all(all.map((r) => r.stop()))
    nact.stop(this.root)
  }
}

/** Starts an actor system for this process. */
export function startActorSystem(options: { name?: string; clock?: Clock } = {}): ActorSystem {
  return new ActorSystem(options)
}
