import { DifficultyError, InstanceError } from './errors.ts'
import { hashSeed, TaskRng } from './rng.ts'
import { type AnyTask, Split } from './task.ts'

/**
 * Picking an instance of a task: from `index` (a fixed numbered instance of a split), from `seed`,
 * or at random. The held-out eval split is made by content: an instance whose key hashes into the
 * eval share belongs to `eval` and is never produced for `train`, whatever the seed.
 */

/** Share of the instance key space held out for evaluation. */
export const EVAL_SHARE = 0.2

/** Generator draws `resolveInstance` tries before it gives up on finding an instance of the split. */
const MAX_DRAWS = 1000

/** Which split an instance key belongs to. */
export function splitOfKey(key: string): Split {
  return hashSeed(`split:${key}`) % 1000 < EVAL_SHARE * 1000 ? Split.Eval : Split.Train
}

/** What to start: the optional fields of `env.start`. */
export interface InstanceRequest {
  index?: number
  seed?: number
  difficulty?: number
  split?: Split
}

/** A resolved instance with the numbers that reproduce it. */
export interface ResolvedInstance<I = unknown> {
  instance: I
  key: string
  difficulty: number
  split: Split
  /** The generator seed that made it (reproduces it with the same difficulty and split). */
  seed: number
}

/**
 * Resolves a request to one instance. `index` wins over `seed`; with neither, `random` draws a seed.
 * @throws DifficultyError for a difficulty outside the task's levels.
 * @throws InstanceError when the generator failed, or 1000 draws found no instance of the split
 *   (the message gives the number of distinct keys seen and how the split is chosen).
 */
export function resolveInstance<I>(
  task: AnyTask,
  request: InstanceRequest,
  random: TaskRng,
): ResolvedInstance<I> {
  const { min, max } = task.difficulty
  const difficulty = request.difficulty ?? task.difficulty.default
  if (!Number.isInteger(difficulty) || difficulty < min || difficulty > max)
    throw new DifficultyError(task.name, difficulty, min, max)
  const split = request.split ?? Split.Train
  const seed =
    request.index !== undefined
      ? hashSeed(`${task.name}:${split}:${difficulty}:index:${request.index}`)
      : (request.seed ?? random.seed())
  const rng = new TaskRng(`${task.name}:${split}:${difficulty}:${seed}`)
  const keys = new Set<string>()
  for (let attempt = 0; attempt < MAX_DRAWS; attempt++) {
    let instance: I
    try {
      instance = task.generate(rng, difficulty) as I
    } catch (cause) {
      throw new InstanceError(
        task.name,
        `generator failed at difficulty ${difficulty}: ${String(cause)}`,
        cause,
      )
    }
    const key = task.key(instance)
    if (splitOfKey(key) === split) return { instance, key, difficulty, split, seed }
    keys.add(key)
  }
  const other = split === Split.Eval ? Split.Train : Split.Eval
  throw new InstanceError(
    task.name,
    `no ${split} instance at difficulty ${difficulty} in ${MAX_DRAWS} draws (${keys.size} distinct ${keys.size === 1 ? 'key' : 'keys'}, all ${other}): ` +
      `the split of an instance is chosen by hashing its key() (about ${EVAL_SHARE * 100}% of distinct keys are eval, the rest train), so the task needs more distinct keys`,
  )
}

/**
 * Checks that a task makes the held-out instances an evaluation plays: indices `0..count-1` of
 * the eval split at `difficulty` (`evaluatePolicy` plays exactly these). A task whose keys all
 * hash to the train split fails here, before a run, instead of at the run's evaluation.
 * @throws InstanceError naming the task, the difficulty and why (see `resolveInstance`).
 * @throws DifficultyError for a difficulty outside the task's levels.
 */
export function checkHeldOut(task: AnyTask, difficulty: number, count: number): void {
  for (let index = 0; index < count; index++)
    resolveInstance(task, { index, difficulty, split: Split.Eval }, new TaskRng(0))
}
