import { existsSync } from 'node:fs'
import { join } from 'node:path'
import {
  CheckpointFile,
  createTransformer,
  disposeTransformer,
  initWeights,
  loadCheckpoint,
  type SftLogRecord,
  saveCheckpoint,
  type TransformerConfig,
} from '../../gpu/index.ts'
import { MetricsAxes } from '../../protocols/index.ts'
import { Learner } from '../learner/index.ts'
import { restoreNewestCheckpoint } from '../pipeline/index.ts'
import type { Child, ChildContext } from '../runtime/index.ts'
import { loadRewardModelCheckpoint, REWARD_MODEL_CHECKPOINT_DIR } from '../triad/index.ts'
import { coldStart, sftTrainingEpisodes } from './cold-start.ts'
import { learnerSettingsOf, type NodeConfig } from './config.ts'
import { type ColdStartedPolicy, type LearnerModel, LearnerNames, registered } from './learner-names.ts'
import { adaptersFromCheckpoint, freshAdapters, type PretrainedPolicy } from './pretrained-policy.ts'

/**
 * Starts the `cold-start` child of the learner tree: the policy learner, registered as
 * `LearnerNames.policy` while it runs. A resume restores the newest step checkpoint that reads
 * whole (`restoreNewestCheckpoint`: policy, optimizer and, with reward-model training on, the
 * reward model of `reward-model-learner`; an unreadable one is skipped with a line on `log`). A
 * fresh run starts from `checkpoints/sft` when it is there, else runs the cold-start SFT
 * (`sft.enabled`; its steps reported on the `sft` axis) or keeps the initial weights, and saves
 * them as `checkpoints/sft`. With a pretrained policy the policy is LoRA adapters on its base. No
 * actors.
 * @throws NoReadableCheckpointError when the run has step checkpoints but none can be read;
 *   InvariantError when the `model` child (or `learner`, for the report) has not registered.
 */
export async function startPolicyColdStart(
  ctx: ChildContext,
  config: NodeConfig,
  log: (line: string) => void,
): Promise<Child> {
  const settled = registered(ctx.system, LearnerNames.model)
  const report = registered(ctx.system, LearnerNames.report)
  const rmLearner = ctx.system.whereis(LearnerNames.rewardModelLearner)
  const { pretrained, tokenizer, chat, modelConfig, backend, experts } = settled
  const checkpointDir = join(config.runDir, 'checkpoints')
  const sftDir = join(checkpointDir, 'sft')
  // The policy of a checkpoint directory (its weights, or its adapters on the shared pretrained base).
  const policyFrom = async (dir: string) =>
    pretrained ? adaptersFromCheckpoint(pretrained, dir, config.seed) : (await loadCheckpoint(dir)).model
  const newLearner = learnerFactory(config, settled, sftDir)

  let rewardModelRestored = false
  const resumed: { learner?: Learner } = {}
  // A resume: the newest step checkpoint that reads whole (policy, optimizer, reward model).
  const latest = await restoreNewestCheckpoint(
    checkpointDir,
    async (c) => {
      const model = await policyFrom(c.dir)
      const candidate = await newLearner(model)
      try {
        await candidate.loadCheckpoint(c.dir)
        // A resumed run continues the reward model it trained (a checkpoint without one: from its cold start or seed).
        const rmDir = join(c.dir, REWARD_MODEL_CHECKPOINT_DIR)
        if (rmLearner && existsSync(rmDir)) {
          await loadRewardModelCheckpoint(rmDir, rmLearner)
          rewardModelRestored = true
          log(`reward model restored from ${rmDir} (${rmLearner.updates} updates)`)
        } else if (rmLearner) log(`no reward model in ${c.dir}`)
      } catch (err) {
        candidate.dispose()
        disposeTransformer(model)
        throw err
      }
      resumed.learner = candidate
    },
    log,
  )
  let learner: Learner
  if (latest) {
    learner = resumed.learner!
    log(`resuming from ${latest.dir} (version ${latest.version})`)
  } else {
    let model: ReturnType<typeof createTransformer>
    try {
      model = await policyFrom(sftDir)
      log(`starting from the SFT checkpoint ${sftDir}`)
    } catch {
      model = pretrained
        ? freshAdapters(pretrained, config.seed)
        : createTransformer(modelConfig, { weights: initWeights(modelConfig, config.seed) })
      if (config.sft.enabled) {
        const datasets = config.sft.datasets?.length ?? 0
        const sets = `${datasets} SFT dataset${datasets === 1 ? '' : 's'}`
        log(
          config.sft.experts === false
            ? `cold-start SFT on ${sets}`
            : `cold-start SFT on expert trajectories${datasets ? ` and ${sets}` : ''}`,
        )
        const onLog = (r: SftLogRecord, total: number) =>
          report(
            {
              'sft/loss': r.loss,
              'sft/tokens_per_s': r.ms > 0 ? (r.tokens * 1000) / r.ms : 0,
              'sft/step': r.step,
              'sft/steps_total': total,
              'sft/grad_norm': r.gradNorm,
            },
            r.step,
            MetricsAxes.sft,
          )
        const { episodes, fromDatasets } = await sftTrainingEpisodes(config, experts)
        const sft = await coldStart(model, chat, episodes, config, onLog, backend.name)
        log(
          `SFT: ${sft.records.length} steps on ${sft.examples} trajectories (${fromDatasets} from sft.datasets, ${sft.truncated} cut to the context, ${sft.dropped} dropped: ended in task_error), final loss ${sft.records.at(-1)?.loss.toFixed(4)}`,
        )
        await saveCheckpoint(sftDir, model, {
          ...(tokenizer ? { tokenizer } : {}),
          metadata: { version: '0', phase: 'sft', backend: backend.name },
        })
      } else {
        // No cold start: the starting weights are kept in its place, so the end-of-run evaluation
        // compares the final checkpoint with where RL began (the paired difference).
        await saveCheckpoint(sftDir, model, {
          ...(tokenizer ? { tokenizer } : {}),
          metadata: { version: '0', phase: 'initial', backend: backend.name },
        })
      }
    }
    learner = await newLearner(model)
  }
  const policy: ColdStartedPolicy = { learner, ...(latest ? { latest } : {}), rewardModelRestored }
  const unregister = ctx.system.register(LearnerNames.policy, policy)
  return { actors: [], stop: async () => unregister() }
}

/**
 * Makes the policy learner of a model: the run's RL settings (`learnerSettingsOf`, micro-batches
 * bounded by `microBatchTokensFor`), version 0, and with `rl.step.beta > 0` the KL reference
 * (`rlStartingPolicy`), read when the first learner is made: on a fresh run that is after the
 * cold-start SFT wrote `checkpoints/sft` (read before it, it would be the seeded random init).
 */
function learnerFactory(
  config: NodeConfig,
  { tokenizer, modelConfig, pretrained }: LearnerModel,
  sftDir: string,
): (model: ReturnType<typeof createTransformer>) => Promise<Learner> {
  let reference: ReturnType<typeof createTransformer> | undefined
  return async (model) => {
    if ((config.rl.step.beta ?? 0) > 0)
      reference ??= await rlStartingPolicy(sftDir, modelConfig, config.seed, pretrained)
    const settings = learnerSettingsOf(config)
    return Learner.create({
      model,
      ...(tokenizer ? { tokenizer } : {}),
      ...settings,
      rl: { ...settings.rl, microBatchTokens: microBatchTokensFor(modelConfig.vocabSize, settings.rl) },
      version: 0,
      ...(reference ? { reference } : {}),
    })
  }
}

/**
 * Bytes of one float32 logits tensor `[tokens, vocabSize]` a training pass may hold: a pass keeps
 * several tensors of that size (logits, log-softmax, their gradients), and the wasm heap fails past
 * about 2.4 GB. A pretrained vocabulary (Qwen's 151,936 ids: 0.6 MB of logits per token) needs far
 * fewer tokens per pass than triad's own.
 */
export const LOGITS_BYTES_PER_PASS = 128 * 2 ** 20

/**
 * Most padded tokens per RL forward/backward pass (`RlStepConfig.microBatchTokens`): the step's
 * setting (default 4096), lowered so that one pass's logits stay within `LOGITS_BYTES_PER_PASS`
 * (a row longer than that still goes alone). Unchanged for triad's own vocabularies.
 */
export function microBatchTokensFor(vocabSize: number, rl: { microBatchTokens?: number }): number {
  const setting = rl.microBatchTokens ?? 4096
  return Math.max(1, Math.min(setting, Math.floor(LOGITS_BYTES_PER_PASS / (4 * vocabSize))))
}

/**
 * The policy RL started from, the reference of the KL term: the SFT checkpoint when the run has
 * one, else the seeded initial weights (SFT off). The same model after a resume, whatever the
 * latest checkpoint holds. With a `pretrained` policy: the SFT adapters on its shared base, else
 * fresh adapters (B zero: the base itself).
 * @throws the checkpoint's error when `sftDir` exists but cannot be read.
 */
export async function rlStartingPolicy(
  sftDir: string,
  modelConfig: TransformerConfig,
  seed: number,
  pretrained?: PretrainedPolicy,
): Promise<ReturnType<typeof createTransformer>> {
  if (pretrained)
    return existsSync(join(sftDir, CheckpointFile.Adapters))
      ? adaptersFromCheckpoint(pretrained, sftDir, seed)
      : freshAdapters(pretrained, seed)
  if (existsSync(join(sftDir, CheckpointFile.Weights))) return (await loadCheckpoint(sftDir)).model
  return createTransformer(modelConfig, { weights: initWeights(modelConfig, seed) })
}
