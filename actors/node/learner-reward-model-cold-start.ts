import { join } from 'node:path'
import { getWeights } from '../../gpu/index.ts'
import { MetricsAxes } from '../../protocols/index.ts'
import type { Child, ChildContext } from '../runtime/index.ts'
import { runSeeds } from '../runtime/index.ts'
import {
  REWARD_MODEL_SFT_DIR,
  RewardModel,
  type RewardModelSftReport,
  rewardModelColdStartOnce,
  rewardModelSftMetrics,
} from '../triad/index.ts'
import type { NodeConfig, NodeTriadConfig } from './config.ts'
import { type ColdStartedRewardModel, LearnerNames, registered } from './learner-names.ts'
import { rewardModelKindOf } from './learner-reward-model.ts'

/**
 * Starts the `reward-model-cold-start` child of the learner tree (step rewards and
 * `triad.rewardModelSft` on): the reward model's cold start, once per run, before version 0 goes
 * out, so that the first judgements already come from a judge that answers `+` or `-`
 * (`rewardModelColdStartOnce`: loads `checkpoints/reward-sft/` when it is there, else trains it;
 * its steps reported on the `reward_model_sft` axis). It trains the reward model of
 * `reward-model-learner` in place when there is one (from the policy's weights with
 * `init: 'policy'`), else a reward model of its own; nothing when that learner was restored with a
 * resumed policy. The weights it leaves are registered as `LearnerNames.rewardModelColdStart`
 * while it runs, for `learner-loop` to publish. No actors.
 * @throws InvariantError when `model`, `cold-start` or `learner` has not registered.
 */
export async function startRewardModelColdStart(
  ctx: ChildContext,
  config: NodeConfig,
  triad: NodeTriadConfig,
  log: (line: string) => void,
): Promise<Child> {
  const settled = registered(ctx.system, LearnerNames.model)
  const { learner, rewardModelRestored } = registered(ctx.system, LearnerNames.policy)
  const report = registered(ctx.system, LearnerNames.report)
  const rmLearner = ctx.system.whereis(LearnerNames.rewardModelLearner)
  const rmSft = triad.rewardModelSft
  if (!rmSft?.enabled || rewardModelRestored) return { actors: [], stop: async () => {} }
  const checkpointDir = join(config.runDir, 'checkpoints')
  const rm =
    rmLearner?.rm ??
    new RewardModel({ ...rewardModelKindOf(settled), seed: runSeeds(config.seed).rewardModel })
  let weights: ColdStartedRewardModel['weights']
  try {
    const dir = join(checkpointDir, REWARD_MODEL_SFT_DIR)
    if (rmSft.init === 'policy') rm.loadWeights(await getWeights(learner.model), rm.version)
    const { report: r, trained } = await rewardModelColdStartOnce(
      rm,
      config,
      rmSft,
      dir,
      (rec, total) =>
        report(
          {
            'reward_model/sft/loss': rec.loss,
            'reward_model/sft/step': rec.step,
            'reward_model/sft/steps_total': total,
            'reward_model/sft/grad_norm': rec.gradNorm,
          },
          rec.step,
          MetricsAxes.rewardModelSft,
        ),
      settled.backend.name,
      {
        model: learner.model,
        tokenizer: settled.chat,
        sampling: {
          maxNewTokens: config.pipeline.maxNewTokens,
          temperature: config.pipeline.temperature,
          top_p: config.pipeline.top_p,
        },
      },
    )
    if (trained) report(rewardModelSftMetrics(r), 0)
    log(
      `reward model ${trained ? 'cold start' : `cold start loaded from ${dir}`}: ${coldStartSummary(r, trained)}`,
    )
    weights = await rm.getWeights()
  } finally {
    if (!rmLearner) rm.dispose()
  }
  const unregister = ctx.system.register(LearnerNames.rewardModelColdStart, { weights })
  return { actors: [], stop: async () => unregister() }
}

/** The cold start's line after `reward model cold start: `: steps, loss, held-out accuracy before and after. */
function coldStartSummary(r: RewardModelSftReport, trained: boolean): string {
  return `${r.steps} steps on ${r.examples} balanced steps, final loss ${r.finalLoss.toFixed(4)}, held-out balanced accuracy ${r.before.balancedAccuracy.toFixed(3)} -> ${r.after.balancedAccuracy.toFixed(3)}${
    r.policyAfter
      ? ` (on the policy's own steps ${r.policyAfter.balancedAccuracy.toFixed(3)}${
          r.policyAfterByTask
            ? `: ${Object.entries(r.policyAfterByTask)
                .map(([t, a]) => `${t} ${a.balancedAccuracy.toFixed(3)}`)
                .join(', ')}`
            : ''
        }; ${r.policySteps} of them trained on)`
      : ''
  }, unparseable ${r.before.unparseable.toFixed(3)} -> ${r.after.unparseable.toFixed(3)}${trained ? ` (${r.seconds.toFixed(1)} s)` : ''}`
}
