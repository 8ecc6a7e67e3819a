import type { ChatMessage, MetricValues, Millis, PayloadOf, RewardJudged } from '../../protocols/index.ts'
import { RewardJudge } from '../../protocols/index.ts'
import type { RemoteRef } from '../runtime/index.ts'
import { episodeJudgeSteps } from './judge-prompt.ts'
import type { TriadSwitches } from './triad-switches.ts'

/**
 * The caller's side of `reward.judge` (the rollout or the learner): judges every step of an episode
 * with m judgements, or does nothing at all when the `stepReward` switch is off (no request leaves,
 * and the metrics count none).
 */

/** The judgements of one episode, `[turns * m]` step-major. */
export type EpisodeJudgements = PayloadOf<typeof RewardJudged>

/** Options of `StepJudge`. */
export interface StepJudgeOptions {
  /** Deadline of one `reward.judge` request, ms; default 60,000. */
  timeoutMs?: Millis
}

/** Asks the reward model to judge episodes, as the switches allow. */
export class StepJudge {
  private calls = 0
  private judged = 0
  constructor(
    private readonly remote: Pick<RemoteRef, 'ask'>,
    private readonly switches: TriadSwitches,
    private readonly options: StepJudgeOptions = {},
  ) {}

  /**
   * Judges each assistant step of `messages` `switches.stepReward.m` times.
   * @param seed seed of the sampling (the trajectory's, so a retry judges the same).
   * @param signal gives the request up when aborted (a stopping rollout node).
   * @returns the judgements, or undefined when the switch is off or the episode has no step.
   * @throws what `RemoteRef.ask` throws (RemoteError, RequestTimeoutError, NoRespondersError,
   *   RequestAbortedError).
   */
  async judgeEpisode(
    task: string,
    messages: readonly ChatMessage[],
    seed?: number,
    signal?: AbortSignal,
  ): Promise<EpisodeJudgements | undefined> {
    if (!this.switches.stepReward.enabled) return undefined
    const steps = episodeJudgeSteps(task, messages)
    if (steps.length === 0) return undefined
    this.calls++
    const reply = await this.remote.ask(
      RewardJudge.make({ steps, m: this.switches.stepReward.m, seed }),
      this.options.timeoutMs ?? 60_000,
      signal,
    )
    this.judged += steps.length
    return reply.payload as EpisodeJudgements
  }

  /**
   * - `reward/judge_calls`: `reward.judge` requests sent; `reward/judged_steps`: steps they covered;
   * - `triad/switch/step_reward`: 1 on, 0 off.
   */
  metrics(): MetricValues {
    return {
      'reward/judge_calls': this.calls,
      'reward/judged_steps': this.judged,
      'triad/switch/step_reward': this.switches.stepReward.enabled ? 1 : 0,
    }
  }
}
