import { machineCores, resolveThreads, THREADS_ENV } from '../../gpu/index.ts'
import type { NodeConfig } from '../node/index.ts'

/**
 * How many threads the native engine gets in each role's process (`NodeConfig.threads`, the
 * recipe's `model.threads`), per layout of a run:
 * - a role alone on its machine (`triad worker`): its count, else `TRIAD_THREADS`, else every core;
 * - learner and rollout as two processes on one machine (`triad run`): a role left `auto` gets its
 *   share of the cores through `TRIAD_THREADS` in its environment (`roleThreadsEnv`);
 * - both in one process (`--in-process`): one pool (`inProcessThreads`).
 */

/** The roles whose thread counts a run sets. */
export type ThreadedRole = 'learner' | 'rollout'

/**
 * The split of `cores` between a learner and a rollout process on one machine: the learner
 * `ceil(cores / 2)`, the rollout the rest, at least 1 each (on one core both get 1).
 */
export function splitCores(cores: number): Record<ThreadedRole, number> {
  const learner = Math.max(1, Math.ceil(cores / 2))
  return { learner, rollout: Math.max(1, cores - learner) }
}

/**
 * Checks a config's thread counts against the cores of the machine that runs the roles.
 * @throws ThreadCountError naming the setting (`model.threads.learner`), the count and the cores.
 */
export function checkRoleThreads(threads: NodeConfig['threads'], cores: number = machineCores()): void {
  for (const role of ['learner', 'rollout'] as const)
    if (threads?.[role] !== undefined) resolveThreads(threads[role], cores, `model.threads.${role}`)
}

/**
 * The environment of each role's process when a run starts the learner and the rollout side by
 * side on this machine: `TRIAD_THREADS` of its share (`splitCores`) for a role the config leaves
 * `auto` (a role with a count gets it from the config itself, which wins over the variable).
 * Nothing is set when `env` already has `TRIAD_THREADS`: the processes inherit it, each taking
 * that many.
 */
export function roleThreadsEnv(
  threads: NodeConfig['threads'],
  cores: number = machineCores(),
  env: Readonly<Record<string, string | undefined>> = process.env,
): Record<ThreadedRole, Record<string, string>> {
  const share = splitCores(cores)
  const out: Record<ThreadedRole, Record<string, string>> = { learner: {}, rollout: {} }
  if (env[THREADS_ENV]) return out
  for (const role of ['learner', 'rollout'] as const)
    if (threads?.[role] === undefined) out[role] = { [THREADS_ENV]: String(share[role]) }
  return out
}

/**
 * The thread count of a process that runs both roles (one pool serves both, and their native
 * calls come one at a time from the one JavaScript thread): the larger of the counts the config
 * gives; `undefined` (auto: `TRIAD_THREADS`, else every core) when it gives none.
 */
export function inProcessThreads(threads: NodeConfig['threads']): number | undefined {
  const given = [threads?.learner, threads?.rollout].filter((n): n is number => n !== undefined)
  return given.length ? Math.max(...given) : undefined
}
