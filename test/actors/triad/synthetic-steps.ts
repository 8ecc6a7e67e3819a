import { createRng } from '../../../gpu/index.ts'
import type { JudgeStep } from '../../../protocols/index.ts'

/**
 * A synthetic labelled step set for the reward model's tests, standing in for the built-in tasks'
 * `step_good` labels (which the rollout side will carry once the tasks run end to end): a one-step
 * "compass" episode whose goal lies to the north-east; the assistant's step moves N, E, S or W and is
 * good (label +1) when it moves toward the goal (N or E) and bad (-1) otherwise. The one-step
 * episode's task reward is 1 when the step is good and 0 when it is bad, so its signed outcome
 * `O = 2r - 1` is +1 or -1 and the consistency reward carries the label. (A harder variant where the goal direction
 * varies and the judge must compare two tokens did not learn within the test's budget from random
 * weights: 100 updates of a 2-layer width-32 model stayed at a constant verdict.)
 */
export const MOVES = ['N', 'E', 'S', 'W'] as const
/** How a step is phrased. */
export const PHRASES = ['go', 'step'] as const

/** One labelled step with its episode's task reward. */
export interface LabelledStep {
  step: JudgeStep
  label: 1 | -1
  /** Task reward r in {0, 1} (the consistency reward signs it: `O = 2r - 1`). */
  outcome: number
}

export function compassStep(move: number, phrase = 0): LabelledStep {
  const good = move === 0 || move === 1
  return {
    step: {
      task: 'compass',
      history: [],
      step: { role: 'assistant', content: `${PHRASES[phrase]} ${MOVES[move]}` },
    },
    label: good ? 1 : -1,
    outcome: good ? 1 : 0,
  }
}

/** The fixed labelled set: every move in every phrasing (8 steps, 4 good and 4 bad). */
export function compassEvalSet(): LabelledStep[] {
  return PHRASES.flatMap((_, p) => MOVES.map((_, mv) => compassStep(mv, p)))
}

/** A seeded training batch of `n` steps drawn uniformly from the same distribution. */
export function compassBatch(n: number, seed: number): LabelledStep[] {
  const rng = createRng(seed)
  return Array.from({ length: n }, () => compassStep(rng.int(4), rng.int(2)))
}
