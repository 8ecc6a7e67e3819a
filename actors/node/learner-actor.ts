import { existsSync } from 'node:fs'
import { join } from 'node:path'
import {
  CheckpointFile,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  getWeights,
  initWeights,
  loadCheckpoint,
  loadTokenizer,
  type SftLogRecord,
  saveCheckpoint,
  saveTokenizer,
  type Tokenizer,
  type TransformerConfig,
} from '../../gpu/index.ts'
import {
  type Envelope,
  LearnerStatus,
  MetricsAxes,
  type MetricsAxis,
  type Millis,
  type TrajectoryGroupPayload,
} from '../../protocols/index.ts'
import { Learner } from '../learner/index.ts'
import {
  ensureTrajectoryStream,
  type LearnerCore,
  LearnerLoop,
  openTrajectoryConsumer,
  restoreNewestCheckpoint,
  TRAJECTORY_LOG_FILE,
} from '../pipeline/index.ts'
import type { Behaviour, Child, ChildContext } from '../runtime/index.ts'
import { envelope, runSeeds, type Transport } from '../runtime/index.ts'
import {
  loadRewardModelCheckpoint,
  OnlineStepAccuracy,
  REWARD_MODEL_CHECKPOINT_DIR,
  REWARD_MODEL_SFT_DIR,
  RewardModel,
  RewardModelLearner,
  rewardModelColdStartOnce,
  rewardModelSftMetrics,
  saveRewardModelCheckpoint,
  stepRewardAdvantages,
  stepRewardsTrusted,
} from '../triad/index.ts'
import { WeightStore } from '../weights/index.ts'
import {
  coldStart,
  firstEpisodesPerTask,
  playExperts,
  runTokenizer,
  sftTrainingEpisodes,
  TOKENIZER_CORPUS_PER_TASK,
} from './cold-start.ts'
import { learnerSettingsOf, type NodeConfig } from './config.ts'
import { exposeLearner, type LearnerNodeStatus, learnerState } from './learner-status.ts'
import {
  adaptersFromCheckpoint,
  freshAdapters,
  loadPretrainedPolicy,
  type PretrainedPolicy,
} from './pretrained-policy.ts'
import { reportMetrics } from './report-metrics.ts'
import { publishRunTokenizer } from './run-tokenizer.ts'
import type { ExpertEpisode } from './sft-dataset.ts'

/**
 * The ack wait of the learner's durable consumer, ms: how long the stream waits for the
 * acknowledgement of a group it handed out before it hands the group out again. Shorter than a
 * learner's restart (the supervisor's backoff, then a process start that loads the tensor
 * library and restores the checkpoint, several seconds), so after a learner dies (`kill -9`) the
 * groups it held are free again by the time the next learner asks for them, instead of holding the
 * stream full for a minute. A live learner keeps its groups alive every third of it
 * (`LearnerLoopSettings.keepAliveMs`), and one handed out again during a long step is recognised
 * by its sequence and not used twice.
 */
export const LEARNER_ACK_WAIT_MS: Millis = 5_000

/** The learner and its loop once made (both absent while the cold start runs). */
interface LearnerLive {
  learner?: Learner
  loop?: LearnerLoop
}

/** The internal message that starts the learner's work (told once at start, never on the wire). */
const RUN = 'learner.run'

/** The learner actor's state: what its status reads, and its work once started. */
interface LearnerActorState {
  live: LearnerLive
  /** The loop's run, once the learner is made. */
  done?: Promise<void>
  /** Set by `stop`: a loop made after it is stopped at once (it still checkpoints nothing new). */
  stopping?: boolean
}

/**
 * Starts the learner actor (actor `learner`, a child of the learner tree): its `learner.run`
 * (told once at start) runs `startLearnerLoop` and then the loop until `maxSteps`; its
 * `learner.status` answers from the live learner at any time, the cold-start SFT included (the
 * actor handles messages concurrently). It is the NATS service `triad-learner` on
 * `Subjects.learner(run)` (`exposeLearner`). Resolves once the first weights are published; the
 * child's `done` resolves when the loop reaches `maxSteps`. A failure of the work crashes the
 * actor and the tree decides (`learnerTree`: the process ends and its supervisor restarts it).
 * @throws what `startLearnerLoop` throws (NoReadableCheckpointError, ...): the tree's start fails.
 */
export async function startLearnerActor(
  ctx: ChildContext,
  transport: Transport,
  config: NodeConfig,
  id: string,
  log: (line: string) => void,
): Promise<Child> {
  const publish = reportMetrics(transport, config.run, 'learner', id)
  const live: LearnerLive = {}
  let lastMetrics: Record<string, number> = {}
  const report = (values: Record<string, number>, step: number, axis?: MetricsAxis) => {
    lastMetrics = values
    publish(values, step, axis)
  }
  const status: LearnerNodeStatus = {
    version: () => live.learner?.version ?? 0,
    steps: () => live.loop?.counts.steps ?? 0,
    checkpoint: () => live.learner?.lastCheckpoint,
    metrics: () => lastMetrics,
    stats: () => ({
      groups: live.loop?.counts.groups ?? 0,
      dropped_stale: live.loop?.counts.droppedStale ?? 0,
      invalid_groups: live.loop?.counts.invalid ?? 0,
    }),
  }
  let ready!: { resolve: () => void; reject: (err: unknown) => void }
  const started = new Promise<void>((resolve, reject) => {
    ready = { resolve, reject }
  })
  let finish!: () => void
  const done = new Promise<void>((resolve) => {
    finish = resolve
  })
  const behaviour: Behaviour<LearnerActorState> = {
    init: () => ({ live }),
    async receive(state, message: Envelope) {
      if (message.type === LearnerStatus.type) return learnerState(status)
      if (message.type !== RUN) return undefined
      try {
        state.done = (await startLearnerLoop(transport, config, log, report, live)).done
      } catch (err) {
        ready.reject(err)
        throw err
      }
      if (state.stopping) live.loop?.stop()
      ready.resolve()
      await state.done
      finish()
      return undefined
    },
    async stop(state) {
      state.stopping = true
      live.loop?.stop()
      await state.done?.catch(() => undefined)
    },
  }
  const ref = ctx.system.spawn('learner', behaviour, { supervision: ctx.supervision, concurrency: 16 })
  const exposed = await exposeLearner(transport, ref, config.run, id, status)
  ref.tell(envelope(RUN, {}) as Envelope)
  try {
    await started
  } catch (err) {
    await ref.stop()
    await exposed.stop()
    throw err
  }
  return {
    actors: [ref],
    done,
    stop: async () => {
      await ref.stop()
      await exposed.stop()
    },
  }
}

/**
 * The learner's work: makes sure the trajectory stream exists, learns or loads the run's
 * tokenizer, restores the newest step checkpoint that can be read (`restoreNewestCheckpoint`: an
 * unreadable one is skipped with a line on `log`) or, when the run has none, runs the cold-start
 * SFT (or starts from random weights), publishes its weights, and makes the learner loop. With a
 * pretrained policy (`config.pretrained`) the model's own tokenizer and chat template replace the
 * run's tokenizer (nothing is learned or published), the policy is LoRA adapters on the base loaded
 * once, and its checkpoints and published weights are the adapters alone. Resolves
 * with the loop's run (`done`, until `maxSteps`) once the first weights are out; `live` sees the learner and
 * the loop as soon as they exist.
 * @throws NoReadableCheckpointError when the run has step checkpoints but none can be read.
 */
async function startLearnerLoop(
  transport: Transport,
  config: NodeConfig,
  log: (line: string) => void,
  report: (values: Record<string, number>, step: number, axis?: MetricsAxis) => void,
  live: LearnerLive,
): Promise<{ done: Promise<void> }> {
  const backend = await chooseBackend({ backend: config.backend, threads: config.threads?.learner, log })
  // The stream holds the buffer plus what the learner holds unacknowledged until its next
  // checkpoint (up to checkpointEvery steps of maxBatchGroups each); a smaller bound would deadlock.
  const p0 = config.pipeline
  await ensureTrajectoryStream(transport, {
    run: config.run,
    maxGroups:
      p0.bufferGroups + p0.checkpointEvery * (p0.mode === 'sync' ? p0.minBatchGroups : p0.maxBatchGroups),
    ackWaitMs: LEARNER_ACK_WAIT_MS,
  })
  const checkpointDir = join(config.runDir, 'checkpoints')
  const sftDir = join(checkpointDir, 'sft')
  // The run's tokenizer: learned once (byte-pair merges from the expert corpus), kept in the run
  // directory for resumes and published to the object store for the other nodes.
  const tokenizerFile = join(config.runDir, 'tokenizer.json')
  // A pretrained policy brings its own tokenizer and chat template (nothing is learned or
  // published: every node loads them from the model directory).
  const pretrained = config.pretrained ? await loadPretrainedPolicy(config) : undefined
  let tokenizer: Tokenizer | undefined
  // The SFT data when the tokenizer is learned here: the first `sft.expertTrajectoriesPerTask` of each task
  // of its corpus (which has at least TOKENIZER_CORPUS_PER_TASK per task).
  let experts: ExpertEpisode[] | undefined
  if (pretrained)
    log(
      `tokenizer and chat template: the pretrained model's (${pretrained.chat.vocabSize} ids, ${pretrained.dir}); LoRA ${JSON.stringify(pretrained.lora)}`,
    )
  else if (existsSync(tokenizerFile)) tokenizer = await loadTokenizer(tokenizerFile)
  else {
    const merges = config.tokenizerMerges ?? 0
    const sftCount =
      config.sft.enabled && config.sft.experts !== false ? config.sft.expertTrajectoriesPerTask : 0
    const count = Math.max(sftCount, merges > 0 ? TOKENIZER_CORPUS_PER_TASK : 0)
    const corpus = count > 0 ? await playExperts(config, count) : []
    experts = firstEpisodesPerTask(corpus, count, sftCount)
    tokenizer = runTokenizer(corpus, merges)
    await saveTokenizer(tokenizerFile, tokenizer)
    log(
      `tokenizer: ${tokenizer.vocabSize} tokens (${merges} byte-pair merges learned from ${corpus.length} expert episodes)`,
    )
  }
  if (tokenizer) await publishRunTokenizer(transport, config.run, tokenizer)
  const modelConfig = pretrained?.modelConfig ?? { ...config.model, vocabSize: tokenizer!.vocabSize }
  const chat = pretrained?.chat ?? tokenizer!
  // The policy of a checkpoint directory (its weights, or its adapters on the shared pretrained base).
  const policyFrom = async (dir: string) =>
    pretrained ? adaptersFromCheckpoint(pretrained, dir, config.seed) : (await loadCheckpoint(dir)).model

  // The KL reference is read when the first learner is made: on a fresh run that is after the
  // cold-start SFT wrote checkpoints/sft (read before it, it would be the seeded random init).
  let reference: ReturnType<typeof createTransformer> | undefined
  const newLearner = async (model: ReturnType<typeof createTransformer>) => {
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
  // The dynamic triad: a reward model trained beside the policy (restored with it on a resume).
  const triad = config.triad
  // The reward model: triad's own model over the run's tokenizer, or its own adapters on the
  // pretrained policy's base (shared, loaded once per process) with the model's chat format.
  const rewardModelKind = pretrained ? { pretrained } : { config: modelConfig, tokenizer: tokenizer! }
  const rmLearner = triad?.trainRewardModel
    ? new RewardModelLearner(
        rewardModelKind,
        config.seed,
        config.rl.lr,
        triad,
        triad.rewardModelBatch,
        learnerSettingsOf(config).optimizer,
      )
    : undefined
  let restored = false
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
          restored = true
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
  live.learner = learner

  const store = await WeightStore.open(transport, config.run)
  // The reward model's cold start, once per run, before version 0 goes out: the first judgements
  // already come from a judge that answers `+` or `-`.
  let rewardWeights = rmLearner && (await rmLearner.weights())
  const rmSft = triad?.rewardModelSft
  if (triad?.stepReward.enabled && rmSft?.enabled && !restored) {
    const rm =
      rmLearner?.rm ?? new RewardModel({ ...rewardModelKind, seed: runSeeds(config.seed).rewardModel })
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
        backend.name,
        {
          model: learner.model,
          tokenizer: chat,
          sampling: {
            maxNewTokens: config.pipeline.maxNewTokens,
            temperature: config.pipeline.temperature,
            top_p: config.pipeline.top_p,
          },
        },
      )
      if (trained) report(rewardModelSftMetrics(r), 0)
      log(
        `reward model ${trained ? 'cold start' : `cold start loaded from ${dir}`}: ${r.steps} steps on ${r.examples} balanced steps, final loss ${r.finalLoss.toFixed(4)}, held-out balanced accuracy ${r.before.balancedAccuracy.toFixed(3)} -> ${r.after.balancedAccuracy.toFixed(3)}${
          r.policyAfter
            ? ` (on the policy's own steps ${r.policyAfter.balancedAccuracy.toFixed(3)}${
                r.policyAfterByTask
                  ? `: ${Object.entries(r.policyAfterByTask)
                      .map(([t, a]) => `${t} ${a.balancedAccuracy.toFixed(3)}`)
                      .join(', ')}`
                  : ''
              }; ${r.policySteps} of them trained on)`
            : ''
        }, unparseable ${r.before.unparseable.toFixed(3)} -> ${r.after.unparseable.toFixed(3)}${trained ? ` (${r.seconds.toFixed(1)} s)` : ''}`,
      )
      rewardWeights = await rm.getWeights()
    } finally {
      if (!rmLearner) rm.dispose()
    }
  }
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
  live.loop = loop
  const done = loop.run(Math.max(0, config.maxSteps - learner.version), (err) =>
    log(`stream unavailable, retrying: ${(err as Error).message}`),
  )
  return { done }
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
