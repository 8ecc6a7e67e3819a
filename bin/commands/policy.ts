import {
  type ActorSystem,
  fetchRunTokenizer,
  type NatsTransport,
  NODE_ENGINE_DRAIN_MS,
  startPolicyEngine,
} from '../../actors/index.ts'
import { chooseBackend, Tokenizer, type TransformerConfig } from '../../gpu/index.ts'
import { CliError } from '../errors.ts'
import { readNodeConfig } from '../worker/node-config-file.ts'

/** Model size of a policy worker when neither the caller nor `TRIAD_POLICY_CONFIG` gives one. */
export const defaultPolicyConfig = (): TransformerConfig => ({
  layers: 2,
  width: 128,
  heads: 4,
  contextLength: 1024,
  vocabSize: new Tokenizer().vocabSize,
})

/**
 * `triad worker --role policy|policy-stale`: one fresh or stale policy engine. The model size comes
 * from `options.modelConfig`, else the run's `--config` node config (with its published tokenizer),
 * else the JSON in `TRIAD_POLICY_CONFIG`, else `defaultPolicyConfig`;
 * stale engines take `staleEvery` from `options.staleEvery` or `TRIAD_STALE_EVERY` (default 25).
 * On stop the engine serves its running requests for `NODE_ENGINE_DRAIN_MS`, as the rollout node's do.
 * @throws CliError when `TRIAD_POLICY_CONFIG` is not JSON.
 */
export async function startPolicyRole(
  ctx: {
    system: ActorSystem
    transport: NatsTransport
    run: string
    id: string
    options: Record<string, unknown>
  },
  stale: boolean,
) {
  await chooseBackend()
  let modelConfig = ctx.options['modelConfig'] as TransformerConfig | undefined
  // Joining a run: its node config gives the model size and staleEvery, and its published
  // tokenizer the vocabulary (byte-pair merges included).
  if (!modelConfig && typeof ctx.options['config'] === 'string') {
    const config = readNodeConfig(ctx.options)
    const tokenizer = await fetchRunTokenizer(ctx.transport, config.run)
    modelConfig = { ...config.model, vocabSize: tokenizer.vocabSize }
    ctx.options['staleEvery'] ??= config.pipeline.staleEvery
  }
  const fromEnv = process.env['TRIAD_POLICY_CONFIG']
  if (!modelConfig && fromEnv) {
    try {
      modelConfig = JSON.parse(fromEnv) as TransformerConfig
    } catch (err) {
      throw new CliError(`TRIAD_POLICY_CONFIG is not JSON: ${(err as Error).message}`, { cause: err })
    }
  }
  const staleEvery = Number(ctx.options['staleEvery'] ?? process.env['TRIAD_STALE_EVERY'] ?? 25)
  return startPolicyEngine(ctx.system, ctx.transport, {
    run: ctx.run,
    id: ctx.id,
    stale,
    staleEvery,
    modelConfig: modelConfig ?? defaultPolicyConfig(),
    drainTimeoutMs: NODE_ENGINE_DRAIN_MS,
  })
}
