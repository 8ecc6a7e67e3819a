import { Tokenizer, type TokenizerSettings, tokenizerJson } from '../../gpu/index.ts'
import { type Millis, weightsBucket } from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'
import { openBlobStore } from '../weights/index.ts'
import { TokenizerTimeoutError } from './errors.ts'

/** Object name of a run's tokenizer in its weights bucket. */
export const TOKENIZER_OBJECT = 'tokenizer.json'

/**
 * Publishes the run's tokenizer (its byte-pair merges) to the run's weights bucket (the object
 * store over NATS, memory in process), so every node, on any machine, renders and decodes tokens
 * exactly as the learner does.
 */
export async function publishRunTokenizer(
  transport: Transport,
  run: string,
  tokenizer: Tokenizer,
): Promise<void> {
  const os = await openBlobStore(transport, weightsBucket(run))
  await os.put(TOKENIZER_OBJECT, new TextEncoder().encode(tokenizerJson(tokenizer)))
}

/**
 * The run's tokenizer as the learner published it, waiting for it up to `timeoutMs` (the learner
 * publishes it before its cold start).
 * @throws TokenizerTimeoutError naming the run when it does not appear in time.
 */
export async function fetchRunTokenizer(
  transport: Transport,
  run: string,
  timeoutMs: Millis = 600_000,
): Promise<Tokenizer> {
  const os = await openBlobStore(transport, weightsBucket(run))
  const deadline = Date.now() + timeoutMs
  let pause = 100
  for (;;) {
    const bytes = await os.get(TOKENIZER_OBJECT).catch(() => null)
    if (bytes) return new Tokenizer(JSON.parse(new TextDecoder().decode(bytes)) as TokenizerSettings)
    if (Date.now() >= deadline) throw new TokenizerTimeoutError(run, timeoutMs)
    await new Promise((r) => setTimeout(r, pause))
    pause = Math.min(pause * 2, 2_000)
  }
}
