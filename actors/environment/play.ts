import type { ChatMessage, SessionStatus, ToolSchema } from '../../protocols/index.ts'
import { type InstanceRequest, resolveInstance } from './instance.ts'
import { TaskRng } from './rng.ts'
import { Session } from './session.ts'
import type { AnyTask, ExpertOptions, Policy } from './task.ts'
import { validatorFor } from './tool-args.ts'

/**
 * Playing one episode in this process: a policy against a task through the same `Session` that
 * the env worker serves. Used by the experts' tests, `triad env try` and SFT data generation.
 */

/** One episode played in this process, as messages (the token record the learner trains on is `Trajectory` of `protocols/`). */
export interface PlayedEpisode {
  task: string
  difficulty: number
  split: string
  /** Generator seed of the instance (replays it with the same difficulty and split). */
  seed: number
  /** The whole conversation: first messages, then assistant and tool messages. */
  messages: ChatMessage[]
  tools: ToolSchema[]
  /** Outcome reward (1 solved, 0 not). */
  reward: number
  status: SessionStatus
  /** Per assistant turn: the `step_good` label (0/1). */
  stepGood: number[]
  /** The final step's metrics (success, turns, invalid_actions, context_bytes, ...). */
  metrics: Record<string, number>
}

/** What to play: an instance request with the policy to play it. */
export interface PlayOptions extends InstanceRequest {
  /** Seed for a random instance when neither `index` nor `seed` is given. */
  randomSeed?: number
}

/**
 * Plays one episode to its end. `policy` is a policy, or a function making one for the instance
 * (the way a scripted expert reads its instance).
 */
export async function playEpisode(
  task: AnyTask,
  options: PlayOptions,
  policy: Policy | ((instance: unknown) => Policy),
): Promise<PlayedEpisode> {
  const resolved = resolveInstance(task, options, new TaskRng(options.randomSeed ?? 0))
  const session = await Session.open('local', task, resolved, validatorFor(task.tools), 0)
  const actor = typeof policy === 'function' ? policy(resolved.instance) : policy
  const messages: ChatMessage[] = [...session.firstMessages]
  const stepGood: number[] = []
  for (;;) {
    let reply: Awaited<ReturnType<Policy['act']>>
    try {
      reply = await actor.act(messages, task.tools)
    } catch (e) {
      await session.abort('task_error')
      throw e
    }
    messages.push(reply)
    const step = await session.interact(reply, 0)
    messages.push(...step.messages)
    stepGood.push(step.metrics.step_good ?? 0)
    if (step.done)
      return {
        task: task.name,
        difficulty: resolved.difficulty,
        split: resolved.split,
        seed: resolved.seed,
        messages,
        tools: [...task.tools],
        reward: step.reward,
        status: step.status,
        stepGood,
        metrics: step.metrics,
      }
  }
}

/** Plays one episode with the task's scripted expert. */
export function playExpert(
  task: AnyTask,
  options: PlayOptions,
  expert: ExpertOptions,
): Promise<PlayedEpisode> {
  return playEpisode(task, options, (instance) => task.expert(instance, expert))
}
