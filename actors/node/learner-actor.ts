import {
  type Envelope,
  LearnerStatus,
  type MetricsAxis,
  type MetricValues,
  metricRecord,
} from '../../protocols/index.ts'
import type { Behaviour, Child, ChildContext, Transport } from '../runtime/index.ts'
import type { NodeConfig } from './config.ts'
import { LearnerNames } from './learner-names.ts'
import { exposeLearner, type LearnerNodeStatus, learnerState } from './learner-status.ts'
import { reportMetrics } from './report-metrics.ts'

/**
 * Starts the learner actor (actor `learner`, the `learner` child of the learner tree): the NATS
 * service `triad-learner` on `Subjects.learner(run)` (`exposeLearner`), whose `learner.status`
 * answers at any time from what the later children registered (`LearnerNames`: the policy learner
 * of `cold-start`, the loop of `learner-loop`; version 0 and no steps before them, as during the
 * cold-start SFT), and the learner's metrics report (registered as `LearnerNames.report`: every
 * report published on `Subjects.metrics(run, 'learner')` and kept for the status). Serves until
 * stopped.
 */
export async function startLearnerActor(
  ctx: ChildContext,
  transport: Transport,
  config: NodeConfig,
  id: string,
): Promise<Child> {
  const publish = reportMetrics(transport, config.run, 'learner', id)
  let lastMetrics: Record<string, number> = {}
  const report = (values: MetricValues, step: number, axis?: MetricsAxis) => {
    lastMetrics = metricRecord(values)
    publish(values, step, axis)
  }
  const system = ctx.system
  const learner = () => system.whereis(LearnerNames.policy)?.learner
  const loop = () => system.whereis(LearnerNames.loop)
  const status: LearnerNodeStatus = {
    version: () => learner()?.version ?? 0,
    steps: () => loop()?.counts.steps ?? 0,
    checkpoint: () => learner()?.lastCheckpoint,
    metrics: () => lastMetrics,
    stats: () => ({
      groups: loop()?.counts.groups ?? 0,
      dropped_stale: loop()?.counts.droppedStale ?? 0,
      invalid_groups: loop()?.counts.invalid ?? 0,
    }),
  }
  const behaviour: Behaviour<object> = {
    init: () => ({}),
    receive: (_state, message: Envelope) =>
      message.type === LearnerStatus.type ? learnerState(status) : undefined,
  }
  const ref = system.spawn('learner', behaviour, { supervision: ctx.supervision, concurrency: 16 })
  const unregister = system.register(LearnerNames.report, report)
  let exposed: Awaited<ReturnType<typeof exposeLearner>>
  try {
    exposed = await exposeLearner(transport, ref, config.run, id, status)
  } catch (err) {
    unregister()
    await ref.stop()
    throw err
  }
  return {
    actors: [ref],
    stop: async () => {
      unregister()
      await ref.stop()
      await exposed.stop()
    },
  }
}
