import type { Millis } from '../../protocols/index.ts'
import type {
  AgentEpisodeResult,
  AgentEpisodeRunner,
  AgentInstanceRef,
  AgentTaskSpec,
} from '../rollout/index.ts'
import { type AgentInstance, AgentInstances } from './agent-instances.ts'
import { AgentEnv, startAgentProgram } from './agent-program.ts'
import { AgentEpisodeError, AgentFailure } from './errors.ts'
import type { Gateway } from './gateway.ts'
import type { SessionOutcome } from './gateway-session.ts'
import { loadRewardFunction } from './reward-module.ts'

/** How long an agent may go on after it reported its reward before it is ended, ms. */
const EXIT_GRACE_MS: Millis = 2_000

/**
 * Plays agent episodes (docs/gateway.md): per episode a gateway session and the
 * task's program started with it (`AgentEnv`), at most `concurrency` programs per task at once.
 * The episode ends with the agent's reward call; or, when the program exits 0 without one, with
 * the task's reward function over the episode's messages. It fails (the driver retries it with a
 * new session and a new process, then counts it by cause) when the program crashes
 * (`agent_crashed`, with its stderr tail), runs past `timeoutS` (`agent_timeout`: killed), exits
 * without a reward and the task has no reward function (`agent_no_reward`), or made no call.
 */
export class AgentRunner implements AgentEpisodeRunner {
  private readonly instances = new Map<string, AgentInstances>()
  private readonly running = new Map<string, number>()
  private readonly waiting = new Map<string, (() => void)[]>()

  constructor(private readonly gateway: Gateway) {}

  async run(
    task: string,
    spec: AgentTaskSpec,
    instance: AgentInstanceRef,
    settings: { maxTurns: number; maxNewTokens: number },
    samplingSeed: number,
    signal: AbortSignal,
  ): Promise<AgentEpisodeResult> {
    let source = this.instances.get(task)
    if (!source) {
      source = AgentInstances.of(spec.instances)
      this.instances.set(task, source)
    }
    const inst = source.pick(instance.seed)
    await this.slot(task, spec.concurrency, signal)
    try {
      return await this.episode(task, spec, inst, settings, samplingSeed, signal)
    } finally {
      this.release(task)
    }
  }

  private async episode(
    task: string,
    spec: AgentTaskSpec,
    instance: AgentInstance,
    settings: { maxTurns: number; maxNewTokens: number },
    seed: number,
    signal: AbortSignal,
  ): Promise<AgentEpisodeResult> {
    const t0 = performance.now()
    const g = this.gateway
    const s = g.openSession({
      task,
      maxTurns: settings.maxTurns,
      maxNewTokens: settings.maxNewTokens,
      timeoutMs: spec.timeoutS * 1000,
      seed,
    })
    const agent = startAgentProgram(spec.program, {
      [AgentEnv.OpenAIBaseUrl]: g.baseUrlOf(s.id),
      [AgentEnv.OpenAIApiKey]: g.apiKey,
      [AgentEnv.GatewayUrl]: g.url,
      [AgentEnv.ApiKey]: g.apiKey,
      [AgentEnv.Session]: s.id,
      [AgentEnv.RewardUrl]: `${g.url}/sessions/${encodeURIComponent(s.id)}/reward`,
      [AgentEnv.Instance]: JSON.stringify(instance),
      [AgentEnv.Task]: task,
      [AgentEnv.MaxTurns]: String(settings.maxTurns),
    })
    const onAbort = () => {
      s.drop(AgentFailure.Stopped, 'the rollout stopped')
      agent.kill()
    }
    signal.addEventListener('abort', onAbort, { once: true })
    // The program's exit, as what it means for the episode.
    const exited = agent.exited.then(async ({ code, signal: sig }) => {
      if (s.ended) return
      if (code !== 0) {
        s.drop(
          AgentFailure.Crashed,
          `${spec.program} exited with ${sig ? `signal ${sig}` : `code ${code}`}${tailOf(agent.stderrTail())}`,
        )
        return
      }
      if (!spec.reward) {
        s.drop(
          AgentFailure.NoReward,
          `${spec.program} exited without posting a reward to ${AgentEnv.RewardUrl}, and the task has no reward function${tailOf(agent.stderrTail())}`,
        )
        return
      }
      let reward: number
      try {
        const fn = await loadRewardFunction(spec.reward)
        reward = await fn(s.recorder.messages(), instance)
      } catch (err) {
        s.drop(AgentFailure.RewardFailed, `reward function ${spec.reward} threw: ${(err as Error).message}`)
        return
      }
      if (typeof reward !== 'number' || !Number.isFinite(reward))
        s.drop(
          AgentFailure.RewardFailed,
          `reward function ${spec.reward} returned ${String(reward)}, not a finite number`,
        )
      else s.finish({ reward, named: {} })
    })
    let outcome: SessionOutcome
    try {
      outcome = await s.outcome
    } catch (err) {
      agent.kill()
      await exited
      if (err instanceof AgentEpisodeError && err.failure === AgentFailure.Timeout && !signal.aborted)
        throw new AgentEpisodeError(err.failure, task, `${err.detail}; killed${tailOf(agent.stderrTail())}`)
      throw err
    } finally {
      signal.removeEventListener('abort', onAbort)
    }
    // Rewarded: the program may finish on its own, briefly.
    const grace = setTimeout(() => agent.kill(), EXIT_GRACE_MS)
    await agent.exited
    clearTimeout(grace)
    if (outcome.trajectories.length === 0)
      throw new AgentEpisodeError(
        AgentFailure.NoCalls,
        task,
        `${spec.program} made no chat call before its reward`,
      )
    return {
      trajectories: outcome.trajectories,
      durationMs: performance.now() - t0,
      generatedTokens: outcome.generatedTokens,
    }
  }

  /** Waits for one of the task's `limit` program slots. */
  private async slot(task: string, limit: number, signal: AbortSignal): Promise<void> {
    while ((this.running.get(task) ?? 0) >= limit) {
      if (signal.aborted) throw signal.reason
      await new Promise<void>((resolve) => {
        const wake = () => {
          signal.removeEventListener('abort', wake)
          resolve()
        }
        const q = this.waiting.get(task) ?? []
        q.push(wake)
        this.waiting.set(task, q)
        signal.addEventListener('abort', wake, { once: true })
      })
    }
    this.running.set(task, (this.running.get(task) ?? 0) + 1)
  }

  private release(task: string) {
    this.running.set(task, (this.running.get(task) ?? 1) - 1)
    this.waiting.get(task)?.shift()?.()
  }
}

const tailOf = (tail: string) => (tail ? `; its stderr ends: ${tail.slice(-600)}` : '')
