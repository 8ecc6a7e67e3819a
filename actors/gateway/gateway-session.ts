import type { ChatFormat } from '../../gpu/index.ts'
import { type ChatMessage, type Millis, SessionStatus, type Trajectory } from '../../protocols/index.ts'
import { EpisodeRecorder } from './episode-recorder.ts'
import type { EpisodeReward } from './episode-reward.ts'
import { AgentEpisodeError, AgentFailure } from './errors.ts'

/** What an agent session is opened with. */
export interface SessionOptions {
  /** The task the episode belongs to (its trajectories' group task). */
  task: string
  /** Most calls (assistant turns) of the episode; a call past it is refused with 409. */
  maxTurns: number
  /** Most tokens one call generates (a request's `max_tokens` may only lower it). */
  maxNewTokens: number
  /** Time from the open to the reward before the episode is dropped with `agent_timeout`, ms. */
  timeoutMs: Millis
  /** Seed of the episode's sampling (turn `t` samples with `seed * 1000 + t`). */
  seed: number
}

/** A finished, rewarded episode. */
export interface SessionOutcome {
  reward: number
  /** Named rewards, when the agent sent a map. */
  named: Record<string, number>
  /** One trajectory per trained segment (see `EpisodeRecorder`). */
  trajectories: Trajectory[]
  /** The last segment's messages, with its last reply. */
  messages: ChatMessage[]
  generatedTokens: number
  turns: number
}

/**
 * One episode of an agent on the gateway: its recorder, its calls in order (one at a time; the
 * others wait their turn), and its end: a reward (`finish`), or a drop with a reason (`drop`: the
 * time bound, the agent's crash, a stop). `outcome` settles once, at the end.
 */
export class GatewaySession {
  readonly recorder: EpisodeRecorder
  /** Calls admitted and not yet answered. */
  pending = 0
  ended = false
  /** Why the episode ended: `rewarded`, or the drop's failure. */
  endedAs: string | undefined
  readonly outcome: Promise<SessionOutcome>
  /** Aborted at the end: calls in flight give up their generation. */
  readonly halt = new AbortController()
  private queue: Promise<unknown> = Promise.resolve()
  private settle!: { resolve: (o: SessionOutcome) => void; reject: (e: unknown) => void }
  private readonly timer: NodeJS.Timeout

  constructor(
    readonly id: string,
    readonly options: SessionOptions,
    chat: ChatFormat,
    contextLength: number,
    /** Told once when the episode ends (the gateway forgets it then). */
    private readonly onEnd: (s: GatewaySession) => void,
  ) {
    this.recorder = new EpisodeRecorder(chat, contextLength)
    this.outcome = new Promise((resolve, reject) => {
      this.settle = { resolve, reject }
    })
    // An episode nobody awaits yet must not be an unhandled rejection.
    this.outcome.catch(() => undefined)
    this.timer = setTimeout(
      () =>
        this.drop(
          AgentFailure.Timeout,
          `no reward within ${(options.timeoutMs / 1000).toFixed(1)} s of the episode's start (${this.recorder.turns} calls made)`,
        ),
      options.timeoutMs,
    )
  }

  /** Runs `fn` after the session's earlier calls (one call at a time keeps the record in order). */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn)
    this.queue = run.catch(() => undefined)
    return run
  }

  /** Ends the episode with its reward; its trajectories carry it. No-op once ended. */
  finish(r: EpisodeReward): void {
    if (this.ended) return
    this.end('rewarded')
    const metrics: Record<string, number> = { success: r.reward > 0 ? 1 : 0 }
    for (const [k, v] of Object.entries(r.named)) metrics[`reward/named/${k}`] = v
    this.settle.resolve({
      reward: r.reward,
      named: r.named,
      trajectories: this.recorder.trajectories({
        reward: r.reward,
        status: SessionStatus.Completed,
        metrics,
      }),
      messages: this.recorder.messages(),
      generatedTokens: this.recorder.generatedTokens,
      turns: this.recorder.turns,
    })
  }

  /** Drops the episode: `outcome` rejects with an AgentEpisodeError. No-op once ended. */
  drop(failure: AgentFailure, detail: string): void {
    if (this.ended) return
    this.end(failure)
    this.settle.reject(new AgentEpisodeError(failure, this.options.task, detail))
  }

  private end(as: string) {
    this.ended = true
    this.endedAs = as
    clearTimeout(this.timer)
    this.halt.abort(new Error(`episode ${this.id} ended (${as})`))
    this.onEnd(this)
  }
}
