import { createRng } from '../../gpu/index.ts'
import type { Millis } from '../../protocols/index.ts'
import type { SupervisionPolicy } from '../runtime/index.ts'

/**
 * Chaos mode (`triad run RECIPE --chaos EVERY`): every `EVERY` seconds one process of the run,
 * picked at random from a seeded schedule (the learner, the rollout, the embedded nats-server), is
 * killed with SIGKILL, as a crash or the OOM killer would, for the whole run. The supervisors bring
 * each back; what was killed is reported at the end with the restarts and the group audit
 * (docs/runs.md#write-errors-stops-and-chaos).
 */

/** Chaos mode asked of a run whose roles are not processes (one process on the in-process transport). */
export class ChaosUnavailableError extends Error {
  override name = 'ChaosUnavailableError'
  constructor() {
    super(
      '--chaos needs the roles in processes of their own: install nats-server (apt-get install nats-server) or join one with --nats; it does not work with --in-process',
    )
  }
}

/** A process chaos mode may kill. */
export interface ChaosTarget {
  /** Its name in the report (`learner`, `rollout`, `nats-server`). */
  name: string
  /** Its current pid; undefined while it is not running (being restarted). */
  pid(): number | undefined
}

/** One kill chaos mode made. */
export interface ChaosKill {
  /** The kill's number, from 1. */
  n: number
  /** The target's name. */
  name: string
  pid: number
  /** When, ms since chaos mode started. */
  atMs: Millis
}

/** Options of `startChaos`. */
export interface ChaosOptions {
  /** Time between two kills, ms (the first comes after one interval). */
  everyMs: Millis
  /** Seed of the schedule (the recipe's `seed`, or `--chaos-seed`). */
  seed: number
  targets: readonly ChaosTarget[]
  /** Called after each kill (the progress line). */
  onKill?: (kill: ChaosKill) => void
}

/** A running chaos mode. */
export interface Chaos {
  /** The kills so far. */
  kills(): readonly ChaosKill[]
  /** Ends chaos mode (no kill after this); returns the kills made. */
  stop(): readonly ChaosKill[]
}

/**
 * Starts chaos mode: every `everyMs` the next pick of the seeded schedule names a target, which is
 * sent SIGKILL. A target that is not running at that moment (being restarted) is passed over for
 * the next one in the list that is; when none is, the tick kills nothing.
 * @throws RangeError when `everyMs` is not a positive finite number or there is no target.
 */
export function startChaos(options: ChaosOptions): Chaos {
  const { everyMs, targets } = options
  if (!Number.isFinite(everyMs) || everyMs <= 0)
    throw new RangeError(`chaos: the interval must be a positive number of seconds, got ${everyMs / 1000}`)
  if (targets.length === 0) throw new RangeError('chaos: no process to kill')
  const rng = createRng(options.seed ^ 0x0c4a05)
  const kills: ChaosKill[] = []
  const started = performance.now()
  let stopped = false
  const tick = () => {
    if (stopped) return
    const first = rng.int(targets.length)
    for (let i = 0; i < targets.length; i++) {
      const target = targets[(first + i) % targets.length]!
      const pid = target.pid()
      if (pid === undefined) continue
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        continue // it exited meanwhile
      }
      const kill: ChaosKill = {
        n: kills.length + 1,
        name: target.name,
        pid,
        atMs: performance.now() - started,
      }
      kills.push(kill)
      options.onKill?.(kill)
      return
    }
  }
  const timer = setInterval(tick, everyMs)
  return {
    kills: () => [...kills],
    stop: () => {
      stopped = true
      clearInterval(timer)
      return [...kills]
    },
  }
}

/**
 * `policy` with room for the kills of chaos mode: one kill every `everyMs` can hit the same
 * process every time, so `ceil(withinMs / everyMs)` restarts are added to the limit of the window.
 * The kills are what chaos mode tests recovery from; a process that fails on its own as often as
 * before is still given up.
 */
export function chaosSupervision(policy: SupervisionPolicy, everyMs: Millis): SupervisionPolicy {
  return { ...policy, maxRestarts: policy.maxRestarts + Math.ceil(policy.withinMs / everyMs) }
}

/** The line of one kill: `chaos: kill 3 at 12.0 s: learner (pid 4242), SIGKILL`. */
export function chaosKillLine(kill: ChaosKill): string {
  return `chaos: kill ${kill.n} at ${(kill.atMs / 1000).toFixed(1)} s: ${kill.name} (pid ${kill.pid}), SIGKILL`
}

/**
 * The lines of the report at the end of a chaos run: the kills (`chaos: 4 kills: learner 2,
 * rollout 1, nats-server 1`) and the restarts of each process (`chaos: restarts: learner 2, ...`).
 */
export function chaosReportLines(
  kills: readonly ChaosKill[],
  restarts: Readonly<Record<string, number>>,
): string[] {
  const byName = new Map<string, number>()
  for (const k of kills) byName.set(k.name, (byName.get(k.name) ?? 0) + 1)
  const list = (m: Iterable<[string, number]>) => [...m].map(([name, n]) => `${name} ${n}`).join(', ')
  return [
    `chaos: ${kills.length} kills${kills.length ? `: ${list(byName)}` : ''}`,
    ...kills.map(chaosKillLine),
    `chaos: restarts: ${list(Object.entries(restarts)) || 'none'}`,
  ]
}
