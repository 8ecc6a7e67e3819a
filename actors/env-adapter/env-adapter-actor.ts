import {
  EnvDifficulty,
  EnvDifficultyGet,
  type Envelope,
  MessageRegistry,
  MetricsReport,
  metricRecord,
  type PayloadOf,
  Subjects,
  TrajectoryGroup,
} from '../../protocols/index.ts'
import type { ActorSystem, Behaviour, SpawnOptions, Transport } from '../runtime/index.ts'
import { type Exposed, exposeActor } from '../runtime/index.ts'
import { switchMetrics, type TriadSwitches } from '../triad/index.ts'
import { type AdaptDecision, DifficultyAdapter, type DifficultyAdapterConfig } from './difficulty-adapter.ts'

/**
 * The env-adapter actor: takes every `trajectory.group` (told by the pipeline, or from the
 * trajectory stream), feeds its outcomes to a `DifficultyAdapter`, publishes `env.difficulty` on
 * `Subjects.difficulty(run)` whenever a level changes and `metrics.report` (role `env-adapter`) after
 * every group; answers `env.difficulty_get` with the current `env.difficulty`.
 *
 * The `adaptiveTasks` switch off: accuracy is still measured and reported, no level ever changes,
 * and the metrics carry `env/adapter/enabled` 0 and `triad/switch/adaptive_tasks` 0.
 */

/** Messages the env adapter accepts. */
export const envAdapterAccepts = new MessageRegistry([TrajectoryGroup, EnvDifficultyGet])
/** Its replies. */
export const envAdapterReplies = new MessageRegistry([EnvDifficulty])

/** Settings of the env-adapter actor. */
export interface EnvAdapterOptions {
  run: string
  /** Id within the role, for `metrics.report`. */
  id?: string
  /** Adapter settings; `enabled` is taken from `switches.adaptiveTasks`. */
  adapter: Omit<DifficultyAdapterConfig, 'enabled'>
  switches: TriadSwitches
  /** Where difficulty updates and metrics go (a transport's `publish`). */
  publish: (subject: string, message: Envelope) => void
  /** Time of a metrics report, ms since the epoch; default `Date.now`. */
  now?: () => number
  /** Called with each decision (logs, tests). */
  onDecision?: (d: AdaptDecision) => void
}

/** State of the env-adapter actor. */
export interface EnvAdapterState {
  adapter: DifficultyAdapter
  /** Latest learner step seen (`started_version` of the groups). */
  step: number
}

/** The env-adapter behaviour. State is rebuilt empty after a restart (levels go back to defaults). */
export function envAdapterBehaviour(options: EnvAdapterOptions): Behaviour<EnvAdapterState> {
  const now = options.now ?? Date.now
  const report = (state: EnvAdapterState) =>
    options.publish(
      Subjects.metrics(options.run, 'env-adapter'),
      MetricsReport.make({
        role: 'env-adapter',
        id: options.id ?? '0',
        step: state.step,
        time: now(),
        values: metricRecord({ ...state.adapter.metrics(), ...switchMetrics(options.switches) }),
      }),
    )
  return {
    init: () => ({
      adapter: new DifficultyAdapter({ ...options.adapter, enabled: options.switches.adaptiveTasks }),
      step: 0,
    }),
    receive: (state, message) => {
      if (message.type === EnvDifficultyGet.type) return EnvDifficulty.make(state.adapter.difficulty())
      if (message.type === TrajectoryGroup.type) {
        const group = message.payload as PayloadOf<typeof TrajectoryGroup>
        state.step = Math.max(state.step, group.started_version)
        const before = state.adapter.revision
        const decisions = state.adapter.recordGroup(group)
        for (const d of decisions) options.onDecision?.(d)
        const difficulty = EnvDifficulty.make(state.adapter.difficulty())
        if (state.adapter.revision !== before) options.publish(Subjects.difficulty(options.run), difficulty)
        report(state)
        return difficulty
      }
      return undefined
    },
  }
}

/**
 * Spawns the env adapter (actor `env-adapter`) and exposes it on `Subjects.difficultyGet(run)` for
 * `env.difficulty_get`, as the NATS service `triad-env-adapter`. Groups are told to the returned ref.
 */
export async function startEnvAdapter(
  system: ActorSystem,
  transport: Transport,
  options: Omit<EnvAdapterOptions, 'publish'> & { spawn?: SpawnOptions },
): Promise<{ ref: ReturnType<ActorSystem['spawn']>; exposed: Exposed }> {
  const ref = system.spawn(
    'env-adapter',
    envAdapterBehaviour({ ...options, publish: (s, m) => transport.publish(s, m) }),
    options.spawn,
  )
  const exposed = await exposeActor(transport, ref, {
    subject: Subjects.difficultyGet(options.run),
    accepts: envAdapterAccepts,
    service: {
      name: 'triad-env-adapter',
      description: 'task difficulty from measured accuracy',
      metadata: { run: options.run },
    },
  })
  return { ref, exposed }
}
