import { mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  type CheckpointWeights,
  decodeSafetensors,
  encodeSafetensors,
  type NamedTensor,
  readCheckpointWeights,
  saveCheckpoint,
  type Transformer,
} from '../../gpu/index.ts'
import { LearnerCheckpointError } from '../learner/index.ts'
import type { RewardModelLearner } from './triad-learner.ts'

/** The folder of the reward model's checkpoint inside the policy's step checkpoint (`step-<n>/reward-model/`). */
export const REWARD_MODEL_CHECKPOINT_DIR = 'reward-model'

/** Files a reward-model checkpoint adds to the model checkpoint of `gpu/checkpoint.ts`. */
export const RewardModelCheckpointFile = {
  /** AdamW moments `m.<param>`, `v.<param>`; metadata `step`. */
  Optimizer: 'optimizer.safetensors',
  /** `{updates, optimizerStep}`; written last, so its presence marks a complete checkpoint. */
  State: 'reward-model.json',
} as const
export type RewardModelCheckpointFile =
  (typeof RewardModelCheckpointFile)[keyof typeof RewardModelCheckpointFile]

/**
 * Checks that a checkpoint read holds weights of `model`'s kind: the same model config, and the
 * same LoRA settings (adapters on a pretrained base) or none (triad's own model).
 * @throws LearnerCheckpointError naming what differs.
 */
export function sameRewardModel(
  dir: string,
  read: Pick<CheckpointWeights, 'config' | 'lora'>,
  model: Transformer,
): void {
  if (JSON.stringify(read.config) !== JSON.stringify(model.config))
    throw new LearnerCheckpointError(
      dir,
      `reward model config ${JSON.stringify(read.config)} differs from the learner's ${JSON.stringify(model.config)}`,
    )
  const mine = model.lora?.config
  if (JSON.stringify(read.lora) !== JSON.stringify(mine))
    throw new LearnerCheckpointError(
      dir,
      `reward model LoRA settings ${JSON.stringify(read.lora ?? 'none')} differ from the learner's ${JSON.stringify(mine ?? 'none')}`,
    )
}

async function writeAtomic(file: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`
  await writeFile(tmp, data)
  await rename(tmp, file)
}

/**
 * Writes the reward model the learner trains into `dir`: its weights (`model.safetensors`,
 * `config.json`, `tokenizer.json`), its AdamW moments (as the policy's checkpoint keeps the
 * policy's) and its update count; `reward-model.json` goes last.
 * @throws LearnerCheckpointError when writing fails.
 */
export async function saveRewardModelCheckpoint(dir: string, learner: RewardModelLearner): Promise<void> {
  try {
    await mkdir(dir, { recursive: true })
    await saveCheckpoint(dir, learner.rm.model, {
      tokenizer: learner.rm.tokenizer,
      metadata: { role: 'reward-model', updates: String(learner.updates) },
    })
    const state = await learner.optimizer.state()
    const tensors: Record<string, NamedTensor> = {}
    for (const [name, data] of Object.entries(state.tensors)) {
      const param = learner.rm.model.params.get(name.slice(2))!
      tensors[name] = { shape: [...param.shape], data }
    }
    await writeAtomic(
      join(dir, RewardModelCheckpointFile.Optimizer),
      encodeSafetensors(tensors, { step: String(state.step) }),
    )
    await writeAtomic(
      join(dir, RewardModelCheckpointFile.State),
      `${JSON.stringify({ updates: learner.updates, optimizerStep: state.step }, null, 2)}\n`,
    )
  } catch (err) {
    throw new LearnerCheckpointError(dir, `cannot write the reward model: ${(err as Error).message}`, {
      cause: err,
    })
  }
}

/**
 * Restores weights, AdamW moments and update count of the reward model from a checkpoint written
 * by `saveRewardModelCheckpoint`. Checks everything before changing anything.
 * @throws LearnerCheckpointError for a missing or incomplete checkpoint, or one of another model size.
 */
export async function loadRewardModelCheckpoint(dir: string, learner: RewardModelLearner): Promise<void> {
  let state: { updates: number; optimizerStep: number }
  let weights: Record<string, Float32Array>
  let moments: Record<string, Float32Array>
  try {
    state = JSON.parse(await readFile(join(dir, RewardModelCheckpointFile.State), 'utf8'))
    const read = await readCheckpointWeights(dir)
    sameRewardModel(dir, read, learner.rm.model)
    weights = read.weights
    const file = join(dir, RewardModelCheckpointFile.Optimizer)
    const decoded = decodeSafetensors(await readFile(file), file)
    moments = Object.fromEntries(Object.entries(decoded.tensors).map(([k, t]) => [k, t.data]))
  } catch (err) {
    if (err instanceof LearnerCheckpointError) throw err
    throw new LearnerCheckpointError(dir, `cannot read the reward model: ${(err as Error).message}`, {
      cause: err,
    })
  }
  if (!Number.isInteger(state.updates) || state.updates < 0)
    throw new LearnerCheckpointError(
      dir,
      `bad updates ${JSON.stringify(state.updates)} in ${RewardModelCheckpointFile.State}`,
    )
  for (const [name, param] of learner.rm.model.params)
    for (const key of [`m.${name}`, `v.${name}`])
      if (moments[key]?.length !== param.size)
        throw new LearnerCheckpointError(dir, `optimizer moment ${key} missing or not ${param.size} values`)
  try {
    learner.optimizer.loadState({ step: state.optimizerStep, tensors: moments })
    learner.rm.loadWeights(weights, learner.rm.version)
  } catch (err) {
    throw new LearnerCheckpointError(dir, (err as Error).message, { cause: err })
  }
  learner.updates = state.updates
}
