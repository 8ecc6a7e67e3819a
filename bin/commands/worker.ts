import type { Command } from 'commander'
import { infoLines, startEcho, startLearnerNode, startRolloutNode } from '../../actors/index.ts'
import { readNodeConfig } from '../worker/node-config-file.ts'
import type { WorkerRoles } from '../worker/role.ts'
import { runWorker } from '../worker/run-worker.ts'

/** The roles a `triad worker` process can take. A failed lookup lists them. */
export const workerRoles: WorkerRoles = {
  echo: async ({ system, transport, run, id }) => startEcho(system, transport, run, id),
  env: async (ctx) => (await import('./env.ts')).startEnvRole(ctx),
  'env-controller': async (ctx) => (await import('./env.ts')).startEnvControllerRole(ctx),
  sandbox: async (ctx) => (await import('./sandbox.ts')).startSandboxRole(ctx),
  policy: async (ctx) => (await import('./policy.ts')).startPolicyRole(ctx, false),
  'policy-stale': async (ctx) => (await import('./policy.ts')).startPolicyRole(ctx, true),
  learner: async ({ system, transport, id, options, logger }) =>
    startLearnerNode(system, transport, readNodeConfig(options), id, { log: infoLines(logger) }),
  rollout: async ({ system, transport, id, options, logger }) =>
    startRolloutNode(system, transport, readNodeConfig(options), id, { log: infoLines(logger) }),
}

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('start one role of a run against a NATS server')
    .requiredOption('--role <role>', `one of: ${Object.keys(workerRoles).join(', ')}`)
    .option('--nats <url>', 'NATS server URL(s), comma separated', 'nats://127.0.0.1:4222')
    .option('--run <id>', 'run id (subjects are triad.<run>.*)', 'default')
    .option('--id <id>', 'this worker id (default: host-pid)')
    .option(
      '--config <file>',
      "the run's node-config.json: the run id for every role; the settings of learner, rollout and policy engines",
    )
    .action(async (options: { role: string; nats: string; run: string; id?: string; config?: string }) => {
      await runWorker(options.role, options, workerRoles)
    })
}
