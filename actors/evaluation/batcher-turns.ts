import type { ContinuousBatcher } from '../../gpu/index.ts'
import type { PayloadOf, PolicyGenerate } from '../../protocols/index.ts'
import type { TurnGenerator } from '../gateway/index.ts'
import type { GeneratedTurn } from '../rollout/index.ts'

/**
 * One checkpoint's continuous batcher as the agent gateway's turn generator: an evaluation serves
 * the checkpoint it evaluates through a gateway of its own (docs/gateway.md#held-out-evaluation), so
 * the agent programs' calls share forward passes with every other episode of the evaluation. Every
 * token carries the batcher model's weight version; `engine` is `eval`, never stale.
 */
export class BatcherTurns implements TurnGenerator {
  constructor(private readonly batcher: ContinuousBatcher) {}

  /** One assistant turn: the request's prompt, length, sampling, stop tokens and seed as given. */
  async generate(request: PayloadOf<typeof PolicyGenerate>, signal?: AbortSignal): Promise<GeneratedTurn> {
    signal?.throwIfAborted()
    const out = await this.batcher.submit(request.prompt, {
      maxNewTokens: request.max_new_tokens,
      temperature: request.temperature,
      top_p: request.top_p,
      stopTokens: request.stop_tokens,
      ...(request.seed === undefined ? {} : { seed: request.seed }),
    })
    return {
      tokens: new Int32Array(out.tokens),
      logprobs: new Float32Array(out.logprobs),
      version: out.version,
      finish_reason: out.finishReason === 'stop' ? 'stop' : 'length',
      engine: 'eval',
      stale: false,
    }
  }
}
