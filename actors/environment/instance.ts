import { DifficultyError, InstanceError } from './errors.ts'
import { hashSeed, Rng } from './rng.ts'
import { type AnyTask, Split } from './task.ts'

/**
 * Picking an instance of a task: from `index` (a fixed numbered instance of a split), from `seed`,
 * or at random. The held-out eval split is made by content: an instance whose key hashes into the
 * eval share belongs to `eval` and is never produced for `train`, whatever the seed.
 */

/** Share of the instance key space held out for evaluation. */
export const EVAL_SHARE = 0.2

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
 * @throws InstanceError when 1000 draws found no instance of the split.
 */
export function resolveInstance<I>(
  task: AnyTask,
  request: InstanceRequest,
  random: Rng,
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
  const rng = new Rng(`${task.name}:${split}:${difficulty}:${seed}`)
  for (let attempt = 0; attempt < 1000; attempt++) {
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
  }
  throw new InstanceError(task.name, `no ${split} instance at difficulty ${difficulty} in 1000 draws`)
}
