import { resolve } from 'node:path'
import type { EvaluationTask, NodeConfig, RunDir } from '../actors/index.ts'
import type { LoraConfig } from '../gpu/index.ts'
import type { ResolvedRecipe } from './task-catalog.ts'

/** Time bound of one agent episode when its task gives none (`tasks[].timeoutS`), s. */
export const AGENT_TIMEOUT_S = 300

/**
 * The agent and MCP tasks of a recipe that have held-out instances (`tasks[].evalInstances`), as an
 * evaluation plays them (docs/gateway.md#held-out-evaluation): the task's own program (or
 * servers and reward) with `instances` its held-out instances, its concurrency and time bound as
 * in training (an MCP task's episodes at once: `pipeline.concurrency`), `pipeline.maxTurns` calls
 * per episode. Tasks without `evalInstances` are left out.
 */
export function agenticEvalTasksOf(recipe: ResolvedRecipe): EvaluationTask[] {
  return recipe.tasks.flatMap((t): EvaluationTask[] => {
    if (t.evalInstances === undefined) return []
    const common = { name: t.name, difficulty: t.difficulty.start, maxTurns: recipe.pipeline.maxTurns }
    if (t.agent !== undefined)
      return [
        {
          ...common,
          agent: {
            program: t.agent,
            instances: t.evalInstances,
            concurrency: t.concurrency ?? recipe.pipeline.concurrency,
            timeoutS: t.timeoutS ?? AGENT_TIMEOUT_S,
            ...(t.reward !== undefined ? { reward: t.reward } : {}),
          },
        },
      ]
    if (t.mcp !== undefined)
      return [
        {
          ...common,
          concurrency: recipe.pipeline.concurrency,
          mcp: { servers: t.mcp, instances: t.evalInstances, reward: t.reward! },
        },
      ]
    return []
  })
}

/** The recipe's LoRA settings as the model takes them (`alpha` and `targets` left out take their defaults). */
function loraOf(lora: NonNullable<ResolvedRecipe['model']['lora']>): LoraConfig {
  return {
    rank: lora.rank,
    ...(lora.alpha === undefined ? {} : { alpha: lora.alpha }),
    ...(lora.targets === undefined ? {} : { targets: [...lora.targets] }),
    dropout: lora.dropout,
  }
}

/** The recipe's explicit thread counts per role (`auto` left out); nothing when both are `auto`. */
function threadsOf(threads: ResolvedRecipe['model']['threads']): Pick<NodeConfig, 'threads'> {
  const out: NonNullable<NodeConfig['threads']> = {}
  if (threads.learner !== 'auto') out.learner = threads.learner
  if (threads.rollout !== 'auto') out.rollout = threads.rollout
  return Object.keys(out).length ? { threads: out } : {}
}

/**
 * What every node of a run needs, derived from a resolved recipe (the SFT's token budget and
 * whether it runs from `recipe.derived`, `sftBatchTokens`). The learner acknowledges
 * trajectory groups only at its checkpoints, so it checkpoints at least every
 * `bufferGroups / minBatchGroups` steps (the stream must hold what it holds unacknowledged);
 * `checkpoints.every` only adds checkpoints.
 */
export function nodeConfigOf(recipe: ResolvedRecipe, dir: RunDir, maxSteps: number): NodeConfig {
  const p = recipe.pipeline
  const ackEvery = Math.max(1, Math.floor(p.bufferGroups / p.minBatchGroups))
  return {
    run: dir.id,
    runDir: dir.path,
    seed: recipe.seed,
    backend: recipe.model.backend === 'auto' ? undefined : recipe.model.backend,
    ...threadsOf(recipe.model.threads),
    tokenizerMerges: recipe.model.merges,
    model: {
      layers: recipe.model.layers,
      width: recipe.model.width,
      heads: recipe.model.heads,
      contextLength: recipe.model.contextLength,
    },
    ...(recipe.model.hf !== undefined && recipe.model.lora !== undefined
      ? { pretrained: { dir: resolve(recipe.model.hf), lora: loraOf(recipe.model.lora) } }
      : {}),
    tasks: recipe.tasks.map((t) => ({
      name: t.name,
      weight: t.weight,
      difficulty: t.difficulty.start,
      ...(t.agent !== undefined
        ? {
            agent: {
              program: t.agent,
              instances: t.instances!,
              concurrency: t.concurrency ?? recipe.pipeline.concurrency,
              timeoutS: t.timeoutS ?? AGENT_TIMEOUT_S,
              ...(t.reward !== undefined ? { reward: t.reward } : {}),
            },
          }
        : {}),
      ...(t.mcp !== undefined ? { mcp: { servers: t.mcp, instances: t.instances!, reward: t.reward! } } : {}),
    })),
    sft: {
      // 0 exactly when SFT is off: no epochs, or neither expert episodes nor datasets.
      enabled: recipe.derived.sftBatchTokens > 0,
      expertTrajectoriesPerTask: recipe.sft.expertTrajectoriesPerTask,
      errorRate: recipe.sft.expertErrorRate,
      successRate: recipe.sft.expertSuccessRate,
      epochs: Math.max(1, recipe.sft.epochs),
      lr: recipe.sft.lr,
      batchTokens: recipe.derived.sftBatchTokens,
      ...(recipe.sft.steps === undefined ? {} : { maxSteps: recipe.sft.steps }),
      threads: recipe.sft.threads,
      experts: recipe.sft.experts,
      datasets: recipe.sft.datasets.map((d) => ({ ...d, path: resolve(d.path) })),
    },
    rl: {
      groupSize: recipe.rl.groupSize,
      lr: recipe.rl.lr,
      optimizer: { weightDecay: recipe.rl.weightDecay, gradClip: recipe.rl.gradClip },
      step: {
        advantage: recipe.rl.advantage,
        taskAdvantageNorm: recipe.rl.taskAdvantageNorm,
        dynamicSampling: recipe.rl.dynamicSampling,
        offPolicy: { ...recipe.rl.offPolicy },
        beta: recipe.rl.kl.beta,
        klEstimator: recipe.rl.kl.estimator,
        entropyCoef: recipe.rl.entropyCoef,
        temperature: p.temperature > 0 ? p.temperature : 1,
        loss: {
          eps_low: recipe.rl.eps_low,
          eps_high: recipe.rl.eps_high,
          c: recipe.rl.c,
          aggregation: recipe.rl.aggregation,
        },
        ...(recipe.rl.overlong.enabled
          ? { overlong: { L_max: recipe.rl.overlong.L_max, L_buf: recipe.rl.overlong.L_buf } }
          : {}),
      },
    },
    pipeline: {
      mode: p.mode,
      freshEngines: p.freshEngines,
      staleEngines: p.staleEngines,
      rho: p.rho,
      staleEvery: p.staleEvery,
      stalenessBound: p.stalenessBound,
      minBatchGroups: p.minBatchGroups,
      maxBatchGroups: p.bufferGroups,
      bufferGroups: p.bufferGroups,
      concurrency: p.concurrency,
      maxTurns: p.maxTurns,
      maxNewTokens: p.maxNewTokens,
      temperature: p.temperature,
      top_p: p.top_p,
      checkpointEvery: recipe.checkpoints.every > 0 ? Math.min(recipe.checkpoints.every, ackEvery) : ackEvery,
      keepCheckpoints: recipe.checkpoints.keep,
      evaluationEvery: recipe.evaluation.every,
    },
    maxSteps,
    triad: {
      adaptiveTasks: recipe.triad.adaptiveTasks,
      adaptEvery: recipe.triad.adaptEvery,
      adaptHigh: recipe.triad.adaptHigh,
      adaptLow: recipe.triad.adaptLow,
      rewardModelBatch: recipe.triad.rewardModelBatch,
      stepReward: { ...recipe.triad.stepReward },
      // The reward model trains on its judgements: nothing to train on without step rewards.
      trainRewardModel: recipe.triad.trainRewardModel && recipe.triad.stepReward.enabled,
      rewardModelSft: {
        // A judge that can judge from the start: only where step rewards ask for judgements.
        enabled: recipe.triad.rewardModelSft.enabled && recipe.triad.stepReward.enabled,
        steps: recipe.triad.rewardModelSft.steps,
        expertTrajectoriesPerTask: recipe.triad.rewardModelSft.expertTrajectoriesPerTask,
        policyTrajectoriesPerTask: recipe.triad.rewardModelSft.policyTrajectoriesPerTask,
        heldOutTrajectoriesPerTask: recipe.triad.rewardModelSft.heldOutTrajectoriesPerTask,
        errorRate: recipe.triad.rewardModelSft.errorRate,
        successRate: recipe.triad.rewardModelSft.successRate,
        lr: recipe.triad.rewardModelSft.lr,
        batchTokens: recipe.triad.rewardModelSft.batchSize * recipe.model.contextLength,
        init: recipe.triad.rewardModelSft.init,
      },
      levels: Object.fromEntries(
        recipe.tasks.map((t) => [
          t.name,
          { min: t.difficulty.min, max: t.difficulty.max, default: t.difficulty.start },
        ]),
      ),
    },
  }
}
