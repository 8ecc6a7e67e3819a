import {
  type Envelope,
  errorReply,
  MessageRegistry,
  type PayloadOf,
  ProtocolError,
  QueueGroups,
  RewardJudge,
  RewardJudged,
  RewardLoadWeights,
  RewardWeightsLoaded,
  Subjects,
} from '../../protocols/index.ts'
import type { ActorSystem, Behaviour, SpawnOptions, Transport } from '../runtime/index.ts'
import { type Exposed, exposeActor } from '../runtime/index.ts'
import { RewardModel, type RewardModelOptions } from './reward-model.ts'

/**
 * The reward-model actor: answers `reward.judge` with m judgements per step and their
 * log-probabilities (`reward.judged`), and `reward.load_weights` by swapping in new weights (the
 * pipeline syncs them from the learner, as the policy's). A prompt that cannot fit the context is an
 * `invalid_message` error reply, not a crash.
 */

/** Messages the reward-model actor accepts. */
export const rewardAccepts = new MessageRegistry([RewardJudge, RewardLoadWeights])
/** Its replies. */
export const rewardReplies = new MessageRegistry([RewardJudged, RewardWeightsLoaded])

/** Settings of the reward-model actor. */
export interface RewardActorOptions {
  /** The model (built by `init`, again after a restart, from these options). */
  model: RewardModelOptions
  /** Judgements per step when a request names none; default 3 (the recipe default). */
  m?: number
  /** Base seed of the sampling when a request names none (then incremented per request); default 0. */
  seed?: number
}

/** State of the reward-model actor. */
export interface RewardActorState {
  rm: RewardModel
  /** Seed of the next request without one. */
  nextSeed: number
}

/** The reward-model behaviour. */
export function rewardBehaviour(options: RewardActorOptions): Behaviour<RewardActorState> {
  return {
    init: () => ({ rm: new RewardModel(options.model), nextSeed: options.seed ?? 0 }),
    receive: async (state, message) => {
      try {
        if (message.type === RewardJudge.type) {
          const p = message.payload as PayloadOf<typeof RewardJudge>
          const seed = p.seed ?? state.nextSeed++
          const r = await state.rm.judge(p.steps, p.m ?? options.m ?? 3, seed)
          return RewardJudged.make({
            m: r.m,
            judgements: r.judgements,
            logprobs: r.logprobs,
            tokens: r.tokens,
            version: r.version,
          })
        }
        if (message.type === RewardLoadWeights.type) {
          const p = message.payload as PayloadOf<typeof RewardLoadWeights>
          state.rm.loadWeights(p.weights, p.version)
          return RewardWeightsLoaded.make({ version: p.version })
        }
      } catch (err) {
        // Validation problems (a prompt too long, weights of the wrong shape) are replies.
        if (err instanceof ProtocolError) return errorReply(err.toPayload()) as Envelope
        if (err instanceof Error && err.name === 'ShapeError')
          return errorReply({ code: 'invalid_message', message: err.message }) as Envelope
        throw err
      }
      return undefined
    },
    stop: (state) => state.rm.dispose(),
  }
}

/**
 * Spawns the reward model (actor `reward-model`) and exposes it on `Subjects.rewardJudge(run)` in
 * queue group `reward`, registered as the NATS service `triad-reward`.
 */
export async function startRewardModel(
  system: ActorSystem,
  transport: Transport,
  run: string,
  options: RewardActorOptions & { spawn?: SpawnOptions; askTimeoutMs?: number },
): Promise<{ ref: ReturnType<ActorSystem['spawn']>; exposed: Exposed }> {
  const ref = system.spawn('reward-model', rewardBehaviour(options), options.spawn)
  const exposed = await exposeActor(transport, ref, {
    subject: Subjects.rewardJudge(run),
    queue: QueueGroups.reward,
    accepts: rewardAccepts,
    askTimeoutMs: options.askTimeoutMs,
    service: {
      name: 'triad-reward',
      description: 'reward model: judges policy steps (reward.judge)',
      metadata: { run },
    },
  })
  return { ref, exposed }
}
