/**
 * Every NATS subject triad uses: `triad.<run>.<area>.<verb>`. Build subjects only through these
 * functions so that monitoring (`triad status`, `nats sub 'triad.>'`) sees one consistent tree.
 *
 * `run` is the run id; it and every other token must be a single NATS token (no dots, spaces or
 * wildcards).
 */

import { SubjectTokenError } from './errors.ts'

const TOKEN = /^[A-Za-z0-9_-]+$/

/**
 * Checks that `token` is a valid subject token.
 * @throws SubjectTokenError naming the bad token.
 */
export function checkToken(token: string, what = 'subject token'): string {
  if (!TOKEN.test(token)) throw new SubjectTokenError(token, what)
  return token
}

/** Builds `triad.<run>.<area>.<verb>[.<rest>...]`. */
export function subject(run: string, area: string, verb: string, ...rest: string[]): string {
  return [
    'triad',
    checkToken(run, 'run id'),
    checkToken(area),
    checkToken(verb),
    ...rest.map((r) => checkToken(r)),
  ].join('.')
}

/** Wildcard matching every subject of one run. */
export const runWildcard = (run: string) => `triad.${checkToken(run, 'run id')}.>`

/** The subjects of one run, by area. */
export const Subjects = {
  /** Environment controller: `env.start` requests (answered by the chosen worker's subject). */
  envStart: (run: string) => subject(run, 'env', 'start'),
  /** Environment controller: worker registration and heartbeats. */
  envHeartbeat: (run: string) => subject(run, 'env', 'heartbeat'),
  /** Environment controller: administrative requests (drain, cancel all, list). */
  envAdmin: (run: string) => subject(run, 'env', 'admin'),
  /** Environment events published by the controller (`env.worker_lost`). */
  envEvents: (run: string) => subject(run, 'env', 'events'),
  /** One environment worker's own subject: sticky `interact` and `cancel` for its sessions. */
  envWorker: (run: string, workerId: string) => subject(run, 'env', 'worker', workerId),
  /** Fresh policy engines (queue group `policy-fresh`): `policy.generate`. */
  policyFresh: (run: string) => subject(run, 'policy', 'fresh'),
  /** Stale policy engines (queue group `policy-stale`): `policy.generate`. */
  policyStale: (run: string) => subject(run, 'policy', 'stale'),
  /** Reward model: `reward.judge` requests. */
  rewardJudge: (run: string) => subject(run, 'reward', 'judge'),
  /** Announcements of new weights (`weights.published`) for a model (`policy`, `reward`). */
  weights: (run: string, model: string) => subject(run, 'weights', 'published', model),
  /** Trajectories published to the JetStream stream, per task. */
  trajectory: (run: string, task: string) => subject(run, 'trajectory', 'done', task),
  /** Learner control (status, checkpoint). */
  learner: (run: string) => subject(run, 'learner', 'control'),
  /** One rollout driver's control (`rollout.status`); `id` is the rollout node's id. */
  rollout: (run: string, id: string) => subject(run, 'rollout', 'control', id),
  /** Metrics published by one role. */
  metrics: (run: string, role: string) => subject(run, 'metrics', checkToken(role, 'role')),
  /** Code sandbox over NATS: `sandbox.run_code`. */
  sandbox: (run: string) => subject(run, 'sandbox', 'run_code'),
  /** Echo probes (`echo.ping`), queue group `echo`. */
  echo: (run: string) => subject(run, 'echo', 'ping'),
  /** Env adapter: difficulty updates. */
  difficulty: (run: string) => subject(run, 'env', 'difficulty'),
  /** Env adapter: `env.difficulty_get` requests (answered with `env.difficulty`). */
  difficultyGet: (run: string) => subject(run, 'env', 'difficulty', 'get'),
} as const

/**
 * Queue group names: engines of one kind share one group so requests spread over them. No dots:
 * a NATS service endpoint (`@nats-io/services`) rejects queue names that contain one.
 */
export const QueueGroups = {
  policyFresh: 'policy-fresh',
  policyStale: 'policy-stale',
  reward: 'reward',
  sandbox: 'sandbox',
  envController: 'env-controller',
  echo: 'echo',
} as const
export type QueueGroup = (typeof QueueGroups)[keyof typeof QueueGroups]
