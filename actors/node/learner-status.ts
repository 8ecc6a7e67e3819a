import {
  type Envelope,
  LearnerState,
  LearnerStatus,
  MessageRegistry,
  Subjects,
} from '../../protocols/index.ts'
import type { ActorRef, Transport } from '../runtime/index.ts'
import { type Exposed, exposeActor } from '../runtime/index.ts'

/** What the learner actor's status reads at each request. */
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

/** What the learner's service accepts: `learner.status`. */
export const learnerStatusAccepts = new MessageRegistry([LearnerStatus])

/** The `learner.state` reply to `learner.status`: the state at the time of the request. */
export function learnerState(status: LearnerNodeStatus): Envelope {
  const checkpoint = status.checkpoint()
  return LearnerState.make({
    version: status.version(),
    steps: status.steps(),
    metrics: status.metrics(),
    ...(checkpoint ? { checkpoint } : {}),
  })
}

/**
 * Exposes the learner actor `ref` on `Subjects.learner(run)` for `learner.status` (answered
 * `learner.state`), registered as the NATS service `triad-learner` with metadata `run` and `id`, so
 * `triad status`, `triad monitor` and standard NATS tooling (`$SRV.PING/INFO/STATS`) list the
 * learner of a run like its other actors. The `$SRV.STATS` data carries `version`, `steps`,
 * `stats()` and the actor's `restarts`. Other requests get an error reply (the learner takes its
 * batches from the trajectory stream, not from requests).
 */
export function exposeLearner(
  transport: Transport,
  ref: ActorRef,
  run: string,
  id: string,
  status: LearnerNodeStatus,
): Promise<Exposed> {
  return exposeActor(transport, ref, {
    subject: Subjects.learner(run),
    accepts: learnerStatusAccepts,
    askTimeoutMs: 10_000,
    service: {
      name: 'triad-learner',
      description: 'triad learner: cold-start SFT, then GRPO-TCR steps from the trajectory stream',
      metadata: { run, id },
      stats: () => ({ version: status.version(), steps: status.steps(), ...status.stats() }),
    },
  })
}
