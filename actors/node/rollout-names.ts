import type { DifficultyView } from '../env-adapter/index.ts'
import type { PolicyEngine } from '../policy/index.ts'
import { type ActorRef, registeredName } from '../runtime/index.ts'

/** The newest policy version the learner announced, and a wait for a later one. */
export interface PolicyVersionWatch {
  version(): number
  /** Resolves once `version() >= at`. */
  untilVersion(at: number): Promise<void>
}

/**
 * The env adapter as the rollout uses it: its actor, and the rollout side's view of the levels it
 * answered (made with the actor, as its revisions start again with a new actor).
 */
export interface EnvAdapterHandle {
  ref: ActorRef
  view: DifficultyView
}

/**
 * The registered names of the rollout tree's children (`rolloutTree`, docs/design.md "The trees of
 * a run"): a child registers its handle under its name when it starts and removes it when it stops
 * (`ActorSystem.register`); the rollout actor, started last, looks its siblings up by these names
 * (`ActorSystem.whereis`). Prefixed `rollout:` (a colon, so no name reads as a metric key): one process may hold the learner's tree too.
 */
export const RolloutNames = {
  /** The `policy-weights` child's watch of the policy versions the learner announced. */
  policyWeights: registeredName<PolicyVersionWatch>('rollout:policy-weights'),
  /** The fresh policy engine of child `policy/<i>`. */
  freshEngine: (i: number) => registeredName<PolicyEngine>(`rollout:policy/${i}`),
  /** The stale policy engine of child `stale-policy/<i>`. */
  staleEngine: (i: number) => registeredName<PolicyEngine>(`rollout:stale-policy/${i}`),
  /** The env adapter of child `env-adapter` (adaptive tasks on). */
  envAdapter: registeredName<EnvAdapterHandle>('rollout:env-adapter'),
} as const
