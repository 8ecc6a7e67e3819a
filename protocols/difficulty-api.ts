import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * Task difficulty, set by the env adapter (RLAnything's task adaptation; docs/design.md#algorithms,
 * dynamic triad). The adapter publishes `env.difficulty` on `Subjects.difficulty(run)` whenever a
 * level changes, and answers `env.difficulty_get` there with the same message, so a rollout process
 * that starts late (or missed an at-most-once publish) can ask. The rollout side starts an episode
 * of `task`, instance `index`, at `tasks[task].levels[String(index)] ?? tasks[task].default`.
 */

/** The levels of one task. */
export const TaskDifficultySchema = z.object({
  /** Level of every instance not listed in `levels` (with per-task adaptation: the task's level). */
  default: z.number().int(),
  /** Level per instance index (decimal string) where it differs from `default`. */
  levels: z.record(z.string(), z.number().int()),
})
export type TaskDifficulty = z.infer<typeof TaskDifficultySchema>

/** `env.difficulty`: the current difficulty of every task the adapter knows. */
export const EnvDifficulty = defineMessage(
  'env.difficulty',
  z.object({
    /** Increases with every change; receivers ignore a message older than the one they hold. */
    revision: z.number().int().nonnegative(),
    /** False when task adaptation is switched off (every task stays at its default). */
    adaptive: z.boolean(),
    tasks: z.record(z.string(), TaskDifficultySchema),
  }),
)

/** `env.difficulty_get`: asks the adapter for the current `env.difficulty`. */
export const EnvDifficultyGet = defineMessage('env.difficulty_get', z.object({}))

export const difficultyMessages = [EnvDifficulty, EnvDifficultyGet] as const
