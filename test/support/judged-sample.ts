import type { TrajectoryGroupPayload } from '../../protocols/index.ts'

/** The reward model's judgements of a sample's one step: m verdicts, their ids and log-probabilities, and the judge prompt. */
export interface StepJudgements {
  /** `[m]`: +1, -1 or 0. */
  judgements: readonly number[]
  /** `[m]` sampled verdict ids. */
  tokens: readonly number[]
  /** `[m]` their log-probabilities. */
  logprobs: readonly number[]
  /** The judge prompt, ids. */
  prompt: ArrayLike<number>
}

/**
 * A one-turn sample: 2 prompt tokens and 2 generated (`loss_mask` on those), whose one step the
 * reward model judged (`judge`); `metrics` may carry its step label (`step_good/0`).
 */
export function judgedSample(
  reward: number,
  judge: StepJudgements,
  metrics: Record<string, number> = {},
): TrajectoryGroupPayload['samples'][number] {
  return {
    tokens: Int32Array.from([1, 2, 3, 4]),
    loss_mask: Uint8Array.from([0, 0, 1, 1]),
    logprobs: Float32Array.from([0, 0, -0.5, -0.5]),
    versions: Int32Array.from([-1, -1, 0, 0]),
    turn_starts: Int32Array.from([2]),
    reward,
    status: 'completed' as const,
    turns: 1,
    metrics,
    stale_turns: 0,
    judgements: Int8Array.from(judge.judgements),
    judge_tokens: Int32Array.from(judge.tokens),
    judge_logprobs: Float32Array.from(judge.logprobs),
    judge_prompts: [Int32Array.from(judge.prompt)],
    judge_version: 0,
  }
}

/** A calc group (index 0, seed 1, level 1, started at version 0) of `samples`. */
export function judgedGroup(samples: TrajectoryGroupPayload['samples']): TrajectoryGroupPayload {
  return { group_id: 'g', task: 'calc', index: 0, seed: 1, difficulty: 1, started_version: 0, samples }
}
