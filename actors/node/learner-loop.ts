import { join } from 'node:path'
import type { TrajectoryGroupPayload } from '../../protocols/index.ts'
import {
  type LearnerCore,
  LearnerLoop,
  openTrajectoryConsumer,
  TRAJECTORY_LOG_FILE,
} from '../pipeline/index.ts'
import type { Child, ChildContext, Transport } from '../runtime/index.ts'
import {
  OnlineStepAccuracy,
  REWARD_MODEL_CHECKPOINT_DIR,
  saveRewardModelCheckpoint,
  stepRewardAdvantages,
  stepRewardsTrusted,
} from '../triad/index.ts'
import { WeightStore } from '../weights/index.ts'
import type { NodeConfig } from './config.ts'
import { LEARNER_ACK_WAIT_MS, LearnerNames, registered } from './learner-names.ts'

/**
 * Starts the `learner-loop` child of the learner tree: publishes the first weights (the reward
 * model's, from `reward-model-cold-start` or `reward-model-learner`, then the policy's, at the
 * policy learner's version), then runs the learner loop (`LearnerLoop`: GRPO-TCR steps on groups
 * from the trajectory stream, checkpoints, weights published after each step) until `maxSteps`;
 * the loop is registered as `LearnerNames.loop` while it runs. With the triad on, each step turns
 * the groups' judgements into step advantages (used when `stepRewardsTrusted`), and the reward
 * model takes its consistency step on the same groups, its weights published when they changed and
 * checkpointed with the policy's. The child's `done` is the loop's run; its stop ends the loop
 * after the step in progress. No actors.
 * @throws InvariantError when `cold-start` or `learner` has not registered.
 */
export async function startLearnerLoop(
  ctx: ChildContext,
  transport: Transport,
  config: NodeConfig,
  log: (line: string) => void,
): Promise<Child> {
  const { learner, latest } = registered(ctx.system, LearnerNames.policy)
  const report = registered(ctx.system, LearnerNames.report)
  const rmLearner = ctx.system.whereis(LearnerNames.rewardModelLearner)
  const coldStarted = ctx.system.whereis(LearnerNames.rewardModelColdStart)
  const triad = config.triad
  const checkpointDir = join(config.runDir, 'checkpoints')
  const store = await WeightStore.open(transport, config.run)
  const rewardWeights = coldStarted?.weights ?? (rmLearner && (await rmLearner.weights()))
  if (rewardWeights) await store.publish(transport, 'reward', learner.version, rewardWeights)
  await store.publish(transport, 'policy', learner.version, await learner.weights())
  // The reward model's balanced accuracy over the newest labelled judgements, on every learner step.
  const online = new OnlineStepAccuracy()
  // The same over every step but its episode's last, whose result says its label outright.
  const onlineEarlier = new OnlineStepAccuracy(undefined, 'earlier_steps')
  const core: LearnerCore = {
    get version() {
      return learner.version
    },
    step: async (groups: readonly TrajectoryGroupPayload[]) => {
      if (!triad) return learner.step(groups)
      const { stepAdvantages, metrics } = stepRewardAdvantages(
        groups,
        triad,
        config.rl.step.overlong ? { overlong: config.rl.step.overlong } : {},
      )
      online.add(metrics)
      onlineEarlier.add(metrics)
      Object.assign(metrics, online.metrics(), onlineEarlier.metrics())
      const trusted = stepRewardsTrusted(triad, metrics)
      metrics['reward/step_reward_used'] = trusted ? 1 : 0
      const t0 = performance.now()
      // Untrusted step rewards leave the outcome rewards to the step's group advantages.
      const out = { ...metrics, ...(await learner.step(groups, trusted ? { stepAdvantages } : {})) }
      out['time/policy_update_s'] = (performance.now() - t0) / 1000
      if (rmLearner) {
        const t1 = performance.now()
        const rm = await rmLearner.step(groups)
        out['time/reward_model_update_s'] = (performance.now() - t1) / 1000
        Object.assign(out, rm.metrics)
        if (rm.trained) {
          await store.publish(transport, 'reward', learner.version, await rmLearner.weights())
          out['reward_model/version'] = learner.version
        }
      }
      return out
    },
    weights: () => learner.weights(),
    saveCheckpoint: async (dir: string) => {
      await learner.saveCheckpoint(dir)
      if (rmLearner) await saveRewardModelCheckpoint(join(dir, REWARD_MODEL_CHECKPOINT_DIR), rmLearner)
    },
  }
  const consumer = await openTrajectoryConsumer(transport, config.run)
  const p = config.pipeline
  const sync = p.mode === 'sync'
  const loop = new LearnerLoop(
    core,
    consumer,
    {
      minBatchGroups: p.minBatchGroups,
      maxBatchGroups: sync ? p.minBatchGroups : p.maxBatchGroups,
      stalenessBound: p.stalenessBound,
      checkpointEvery: p.checkpointEvery,
      keepCheckpoints: p.keepCheckpoints,
      evaluationEvery: p.evaluationEvery,
      checkpointDir,
      waitMs: 5_000,
      keepAliveMs: LEARNER_ACK_WAIT_MS / 3,
      maxTokens: config.model.contextLength + 1,
      trajectoryLog: join(config.runDir, TRAJECTORY_LOG_FILE),
    },
    async (version, weights) => {
      await store.publish(transport, 'policy', version, weights)
    },
    report,
    latest,
  )
  const unregister = ctx.system.register(LearnerNames.loop, loop)
  const done = loop.run(Math.max(0, config.maxSteps - learner.version), (err) =>
    log(`stream unavailable, retrying: ${(err as Error).message}`),
  )
  // Its failure is the child's (the tree reads `done`); this only keeps it from counting as
  // unhandled before the tree does.
  done.catch(() => undefined)
  return {
    actors: [],
    done,
    stop: async () => {
      loop.stop()
      await done.catch(() => undefined)
      unregister()
    },
  }
}
