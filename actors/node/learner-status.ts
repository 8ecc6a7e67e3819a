import { LearnerState, LearnerStatus, MessageRegistry, Subjects } from '../../protocols/index.ts'
import type { Served, Transport } from '../runtime/transport.ts'

/** What the learner node's status service reads at each request. */
export interface LearnerNodeStatus {
  /** The learner's weight version (its latest RL step; 0 before the first). */
  version(): number
  /** RL steps taken by this process since it started. */
  steps(): number
  /** Directory of the latest checkpoint written or resumed from, if any. */
  checkpoint(): string | undefined
  /** Values of the learner's latest metrics report (SFT or RL; empty before the first). */
  metrics(): Record<string, number>
  /** Counters added to the service's `$SRV.STATS` data (groups used, groups dropped, ...). */
  stats(): Record<string, number>
}

const accepts = new MessageRegistry([LearnerStatus])

/**
 * Serves `learner.status` (answered `learner.state`) on `Subjects.learner(run)` for the learner node,
 * registered as the NATS service `triad-learner` with metadata `run` and `id`, so `triad status`,
 * `triad monitor` and standard NATS tooling (`$SRV.PING/INFO/STATS`) list the learner of a run like
 * its other actors. The `$SRV.STATS` data carries `version`, `steps` and `stats()`. Other requests
 * get an error reply (the node's learner takes its batches from the trajectory stream, not from
 * requests).
 */
export function serveLearnerStatus(
  transport: Transport,
  run: string,
  id: string,
  status: LearnerNodeStatus,
): Promise<Served> {
  return transport.serve(Subjects.learner(run), {
    accepts,
    handler: () => {
      const checkpoint = status.checkpoint()
      return LearnerState.make({
        version: status.version(),
        steps: status.steps(),
        metrics: status.metrics(),
        ...(checkpoint ? { checkpoint } : {}),
      })
    },
    service: {
      name: 'triad-learner',
      description: 'triad learner node: cold-start SFT, then GRPO-TCR steps from the trajectory stream',
      metadata: { run, id },
      stats: () => ({ version: status.version(), steps: status.steps(), ...status.stats() }),
    },
  })
}
