import type { Child, ChildContext } from '../runtime/index.ts'
import { RewardModelLearner } from '../triad/index.ts'
import { learnerSettingsOf, type NodeConfig, type NodeTriadConfig } from './config.ts'
import { type LearnerModel, LearnerNames, registered } from './learner-names.ts'

/**
 * What the reward model is, on the policy's model: triad's own model over the run's tokenizer, or
 * its own adapters on the pretrained policy's base (shared, loaded once per process) with the
 * model's chat format.
 */
export function rewardModelKindOf(model: LearnerModel) {
  return model.pretrained
    ? { pretrained: model.pretrained }
    : { config: model.modelConfig, tokenizer: model.tokenizer! }
}

/**
 * Starts the `reward-model-learner` child of the learner tree (reward-model training on,
 * `triad.trainRewardModel`): the reward model trained beside the policy (`RewardModelLearner`:
 * seeded `runSeeds(seed).rewardModel`, the policy's learning rate and AdamW settings, at most
 * `triad.rewardModelBatch` judged steps an update), registered as `LearnerNames.rewardModelLearner`
 * while it runs. `cold-start` restores it with the policy on a resume; `learner-loop` steps it. No
 * actors.
 * @throws InvariantError when the `model` child has not registered the policy's model.
 */
export async function startRewardModelLearner(
  ctx: ChildContext,
  config: NodeConfig,
  triad: NodeTriadConfig,
): Promise<Child> {
  const model = registered(ctx.system, LearnerNames.model)
  const rmLearner = new RewardModelLearner(
    rewardModelKindOf(model),
    config.seed,
    config.rl.lr,
    triad,
    triad.rewardModelBatch,
    learnerSettingsOf(config).optimizer,
  )
  const unregister = ctx.system.register(LearnerNames.rewardModelLearner, rmLearner)
  return { actors: [], stop: async () => unregister() }
}
