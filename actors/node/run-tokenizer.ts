import { Objm } from '@nats-io/obj'
import type { NatsConnection } from '@nats-io/transport-node'
import { Tokenizer, type TokenizerSettings, tokenizerJson } from '../../gpu/index.ts'
import { type Millis, weightsBucket } from '../../protocols/index.ts'

/** Object name of a run's tokenizer in its weights bucket. */
export const TOKENIZER_OBJECT = 'tokenizer.json'

/**
 * Publishes the run's tokenizer (its byte-pair merges) to the run's object store bucket, so every
 * node, on any machine, renders and decodes tokens exactly as the learner does.
 */
export async function publishRunTokenizer(
  nc: NatsConnection,
  run: string,
  tokenizer: Tokenizer,
): Promise<void> {
  const os = await new Objm(nc as never).create(weightsBucket(run))
  await os.putBlob({ name: TOKENIZER_OBJECT }, new TextEncoder().encode(tokenizerJson(tokenizer)))
}

/**
 * The run's tokenizer as the learner published it, waiting for it up to `timeoutMs` (the learner
 * publishes it before its cold start).
 * @throws Error naming the run when it does not appear in time.
 */
export async function fetchRunTokenizer(
  nc: NatsConnection,
  run: string,
  timeoutMs: Millis = 600_000,
): Promise<Tokenizer> {
  const os = await new Objm(nc as never).create(weightsBucket(run))
  const deadline = Date.now() + timeoutMs
  let pause = 100
  for (;;) {
    const bytes = await os.getBlob(TOKENIZER_OBJECT).catch(() => null)
    if (bytes) return new Tokenizer(JSON.parse(new TextDecoder().decode(bytes)) as TokenizerSettings)
    if (Date.now() >= deadline)
      throw new Error(`run ${run}: no tokenizer published within ${timeoutMs} ms (is the learner running?)`)
    await new Promise((r) => setTimeout(r, pause))
    pause = Math.min(pause * 2, 2_000)
  }
}
