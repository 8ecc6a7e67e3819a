import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import path from 'node:path'
import {
  AdamW,
  type AdamWConfig,
  constantLr,
  createTransformer,
  decodeSafetensors,
  disposeTransformer,
  encodeSafetensors,
  getWeights,
  type LrSchedule,
  type NamedTensor,
  RL_STEP_DEFAULTS,
  type RlStepConfig,
  type RlStepMetrics,
  readCheckpointWeights,
  rlStep,
  saveCheckpoint,
  setWeights,
  type Tokenizer,
  type Transformer,
  withAdapters,
} from '../../gpu/index.ts'
import type { TrajectoryGroupPayload } from '../../protocols/index.ts'
import { InvariantError } from '../../protocols/index.ts'
import { packGroups } from './batch.ts'
import { LearnerCheckpointError } from './errors.ts'

/** Files a learner checkpoint adds to the model checkpoint of `gpu/checkpoint.ts`. */
export const LearnerCheckpointFile = {
  /** AdamW moments `m.<param>`, `v.<param>`; metadata `step`. */
  Optimizer: 'optimizer.safetensors',
  /** `{version, optimizerStep}`; written last, so its presence marks a complete checkpoint. */
  State: 'learner.json',
} as const
export type LearnerCheckpointFile = (typeof LearnerCheckpointFile)[keyof typeof LearnerCheckpointFile]

/** Settings of a `Learner`. */
export interface LearnerOptions {
  /** The policy to train (its parameters are updated in place). */
  model: Transformer
  /**
   * Saved with every checkpoint (`tokenizer.json`); may be left out only for a LoRA model on a
   * Hugging Face base, whose checkpoints use the base's tokenizer.
   */
  tokenizer?: Tokenizer
  /** Learning rate: a number or a schedule of the optimizer step. */
  lr: number | LrSchedule
  /** RL step settings; missing fields take `RL_STEP_DEFAULTS` (DemyAgent GRPO-TCR). */
  rl?: Partial<RlStepConfig>
  /** AdamW settings (grad clip 1.0 by default). */
  optimizer?: AdamWConfig
  /** Frozen reference policy for the KL term: a model, or `copy` to freeze the initial weights. */
  reference?: Transformer | 'copy'
  /** Weight version of `model` at start (0 for initial or SFT weights). */
  version?: number
  /** Where interval checkpoints go (`<dir>/step-<version>`); none when absent. */
  checkpointDir?: string
  /** Write a checkpoint every this many steps (0: never); default 0. */
  checkpointEvery?: number
  /** Padding token id of packed batches; default 0. */
  padId?: number
  /** Clock in ms for throughput metrics; default `performance.now`. */
  now?: () => number
}

/** The directory name of the checkpoint of `version`: `step-000042`. */
export const checkpointName = (version: number) => `step-${String(version).padStart(6, '0')}`

/**
 * The newest complete checkpoint (`step-<n>` with `learner.json`) under `root`, or undefined.
 */
export async function latestCheckpoint(root: string): Promise<string | undefined> {
  let names: string[]
  try {
    names = await readdir(root)
  } catch {
    return undefined
  }
  const steps = names
    .filter((n) => /^step-\d+$/.test(n))
    .sort((a, b) => Number(b.slice(5)) - Number(a.slice(5)))
  for (const name of steps) {
    const files = await readdir(path.join(root, name))
    if (files.includes(LearnerCheckpointFile.State)) return path.join(root, name)
  }
  return undefined
}

/**
 * The RL learner as a plain class: packs trajectory groups, runs one GRPO-TCR step
 * (`gpu/rl-step.ts`) with AdamW, counts weight versions, writes checkpoints at an interval, and
 * hands out its weights. The `learner-loop` child of the learner tree (`actors/node/learner-loop.ts`)
 * runs it through the pipeline's learner loop, as its `LearnerCore` (the loop then does the
 * checkpointing itself).
 */
export class Learner {
  /** Weight version: the initial version plus the steps taken. */
  version: number
  /** Steps taken by this instance. */
  steps = 0
  /** Latest checkpoint written or loaded. */
  lastCheckpoint: string | undefined
  /** Checkpoint written by the latest step (its interval fell on it), else undefined. */
  stepCheckpoint: string | undefined
  /** Metrics of the latest step. */
  lastMetrics: RlStepMetrics = {}
  readonly model: Transformer
  readonly reference: Transformer | undefined
  readonly config: RlStepConfig
  /** The policy's AdamW (its settings from `LearnerOptions.optimizer`). */
  readonly optimizer: AdamW
  private readonly tokenizer: Tokenizer | undefined
  private readonly schedule: LrSchedule
  private readonly options: LearnerOptions
  private busy = false

  private constructor(options: LearnerOptions, reference: Transformer | undefined) {
    this.options = options
    this.model = options.model
    this.tokenizer = options.tokenizer
    this.reference = reference
    this.config = { ...RL_STEP_DEFAULTS, ...options.rl }
    this.optimizer = new AdamW(options.model.params, options.optimizer)
    this.schedule = typeof options.lr === 'number' ? constantLr(options.lr) : options.lr
    this.version = options.version ?? 0
  }

  /** Builds a learner (copying the reference weights when `reference` is `copy`). */
  static async create(options: LearnerOptions): Promise<Learner> {
    const model = options.model
    // Under LoRA the copy shares the frozen base and copies only the adapters.
    const reference =
      options.reference === 'copy'
        ? model.lora
          ? withAdapters(model, await getWeights(model))
          : createTransformer(model.config, { weights: await getWeights(model) })
        : options.reference
    return new Learner(options, reference)
  }

  /**
   * One RL step on whole trajectory groups, packed here (`packGroups`: the one place a group is
   * packed) into an `RlBatch` of at most the model's context + 1 tokens a row. Advances the
   * version; writes a checkpoint when `checkpointEvery` divides the new version (see
   * `stepCheckpoint`).
   * @param groups the groups of the step, in order.
   * @param options.stepAdvantages token-level advantages, one `[seqLen_i]` float32 row per sample
   *   in packing order (RLAnything's step rewards, `stepRewardAdvantages`); absent: the step
   *   computes the GRPO group advantages from the outcome rewards.
   * @returns `rlStep`'s metrics plus `learner/version` (the version after the step).
   * @throws BatchError for groups (or step advantages) that cannot be packed (nothing changes);
   *   ShapeError / ConfigError from `rlStep` for a bad batch or config; InvariantError when a step
   *   is already running.
   */
  async step(
    groups: readonly TrajectoryGroupPayload[],
    options: { stepAdvantages?: readonly Float32Array[] } = {},
  ): Promise<RlStepMetrics> {
    if (this.busy) throw new InvariantError('Learner.step called while another step runs')
    this.busy = true
    this.stepCheckpoint = undefined
    try {
      const batch = packGroups(groups, {
        maxTokens: this.model.config.contextLength + 1,
        padId: this.options.padId,
        ...(options.stepAdvantages ? { stepAdvantages: options.stepAdvantages } : {}),
      })
      const lr = this.schedule(this.optimizer.stepCount)
      const metrics = await rlStep(
        {
          model: this.model,
          optimizer: this.optimizer,
          reference: this.reference,
          lr,
          version: this.version,
          now: this.options.now,
        },
        batch,
        this.config,
      )
      this.version++
      this.steps++
      metrics['learner/version'] = this.version
      this.lastMetrics = metrics
      const every = this.options.checkpointEvery ?? 0
      if (every > 0 && this.options.checkpointDir && this.version % every === 0) {
        await this.saveCheckpoint()
        this.stepCheckpoint = this.lastCheckpoint
      }
      return metrics
    } finally {
      this.busy = false
    }
  }

  /**
   * Writes model (`model.safetensors`, `config.json`, `tokenizer.json`; under LoRA the adapters
   * alone, `gpu/checkpoint.ts`), optimizer moments (of the adapters alone under LoRA) and the
   * version to `dir` (default `<checkpointDir>/step-<version>`); `learner.json` goes last.
   * The directory becomes `lastCheckpoint`.
   * @throws LearnerCheckpointError when no directory is known or writing fails.
   */
  async saveCheckpoint(dir?: string): Promise<void> {
    const target =
      dir ??
      (this.options.checkpointDir
        ? path.join(this.options.checkpointDir, checkpointName(this.version))
        : undefined)
    if (!target)
      throw new LearnerCheckpointError('(none)', 'no checkpoint directory: pass one or set checkpointDir')
    try {
      await mkdir(target, { recursive: true })
      await saveCheckpoint(target, this.model, {
        ...(this.tokenizer ? { tokenizer: this.tokenizer } : {}),
        metadata: { version: String(this.version) },
      })
      const state = await this.optimizer.state()
      const tensors: Record<string, NamedTensor> = {}
      for (const [name, data] of Object.entries(state.tensors)) {
        const param = this.model.params.get(name.slice(2))!
        tensors[name] = { shape: [...param.shape], data }
      }
      await writeAtomic(
        path.join(target, LearnerCheckpointFile.Optimizer),
        encodeSafetensors(tensors, { step: String(state.step) }),
      )
      const json = { version: this.version, optimizerStep: state.step }
      await writeAtomic(path.join(target, LearnerCheckpointFile.State), `${JSON.stringify(json, null, 2)}\n`)
    } catch (err) {
      if (err instanceof LearnerCheckpointError) throw err
      throw new LearnerCheckpointError(target, `cannot write: ${(err as Error).message}`, { cause: err })
    }
    this.lastCheckpoint = target
  }

  /**
   * Restores weights, optimizer moments and version from a checkpoint written by `saveCheckpoint`.
   * Checks everything before changing anything.
   * @throws LearnerCheckpointError for a missing or incomplete checkpoint or one of another model size.
   */
  async loadCheckpoint(dir: string): Promise<void> {
    let state: { version: number; optimizerStep: number }
    let weights: Record<string, Float32Array>
    let moments: Record<string, Float32Array>
    try {
      state = JSON.parse(await readFile(path.join(dir, LearnerCheckpointFile.State), 'utf8'))
      const read = await readCheckpointWeights(dir)
      if (JSON.stringify(read.config) !== JSON.stringify(this.model.config)) {
        throw new LearnerCheckpointError(
          dir,
          `model config ${JSON.stringify(read.config)} differs from the learner's ${JSON.stringify(this.model.config)}`,
        )
      }
      if (JSON.stringify(read.lora) !== JSON.stringify(this.model.lora?.config)) {
        throw new LearnerCheckpointError(
          dir,
          `LoRA settings ${JSON.stringify(read.lora ?? 'none')} differ from the learner's ${JSON.stringify(this.model.lora?.config ?? 'none')}`,
        )
      }
      weights = read.weights
      const optimizerFile = path.join(dir, LearnerCheckpointFile.Optimizer)
      const decoded = decodeSafetensors(await readFile(optimizerFile), optimizerFile)
      moments = Object.fromEntries(Object.entries(decoded.tensors).map(([k, t]) => [k, t.data]))
    } catch (err) {
      if (err instanceof LearnerCheckpointError) throw err
      throw new LearnerCheckpointError(dir, `cannot read: ${(err as Error).message}`, { cause: err })
    }
    if (!Number.isInteger(state.version) || state.version < 0) {
      throw new LearnerCheckpointError(
        dir,
        `bad version ${JSON.stringify(state.version)} in ${LearnerCheckpointFile.State}`,
      )
    }
    for (const [name, param] of this.model.params) {
      for (const key of [`m.${name}`, `v.${name}`]) {
        if (moments[key]?.length !== param.size) {
          throw new LearnerCheckpointError(dir, `optimizer moment ${key} missing or not ${param.size} values`)
        }
      }
    }
    try {
      this.optimizer.loadState({ step: state.optimizerStep, tensors: moments })
      setWeights(this.model, weights)
    } catch (err) {
      throw new LearnerCheckpointError(dir, (err as Error).message, { cause: err })
    }
    this.version = state.version
    this.lastCheckpoint = dir
  }

  /** The current weights as plain arrays by parameter name (copies). */
  weights(): Promise<Record<string, Float32Array>> {
    return getWeights(this.model)
  }

  /** Frees the optimizer moments and a reference model this learner copied. */
  dispose(): void {
    this.optimizer.dispose()
    if (this.options.reference === 'copy' && this.reference) {
      disposeTransformer(this.reference)
    }
  }
}

async function writeAtomic(file: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`
  await writeFile(tmp, data)
  await rename(tmp, file)
}
