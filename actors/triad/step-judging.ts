import type { ChatMessage, Trajectory } from '../../protocols/index.ts'
import type { EpisodeAnnotator } from '../rollout/index.ts'
import { episodeJudgeSteps, type JudgeFormat, renderJudgePrompt } from './judge-prompt.ts'
import type { StepJudge } from './step-judge.ts'

/** The trajectory fields a judged episode carries (`protocols/trajectory-api.ts`). */
export type JudgementFields = Pick<
  Trajectory,
  'judgements' | 'judge_tokens' | 'judge_logprobs' | 'judge_prompts' | 'judge_version'
>

/**
 * The rollout side of the step reward: after an episode, asks the reward-model actor (over NATS,
 * through `StepJudge`) for m judgements of each assistant step of the episode's chat messages, and
 * returns them as trajectory fields, with the judge prompts (rendered as the reward model renders
 * them, `renderJudgePrompt`) so the learner can train the reward model on its own verdicts.
 * Nothing is asked (and undefined returned) when the `stepReward` switch is off.
 * @param format the reward model's tokenizer or chat format (`RewardModel.format`).
 * @param maxPromptTokens the reward model's context length minus one.
 */
export function stepJudgeAnnotator(
  judge: StepJudge,
  format: JudgeFormat,
  maxPromptTokens: number,
): EpisodeAnnotator {
  return async (task: string, messages: readonly ChatMessage[], seed: number, signal?: AbortSignal) => {
    const reply = await judge.judgeEpisode(task, messages, seed, signal)
    if (!reply) return undefined
    const steps = episodeJudgeSteps(task, messages)
    const fields: JudgementFields = {
      judgements: Int8Array.from(reply.judgements),
      judge_tokens: Int32Array.from(reply.tokens),
      judge_logprobs: Float32Array.from(reply.logprobs),
      judge_prompts: steps.map((s, j) => Int32Array.from(renderJudgePrompt(format, s, maxPromptTokens, j))),
      judge_version: reply.version,
    }
    return fields
  }
}
