import type { ToolSchema } from '../../protocols/index.ts'
import { PolicyEndpointCheckError, PolicyEndpointError } from './errors.ts'
import { OpenAIPolicy, type OpenAIPolicyOptions } from './openai-policy.ts'

/** Deadline of the start check's request unless the options give one, ms. */
const CHECK_TIMEOUT_MS = 30_000

/**
 * The start check of an OpenAI-compatible policy endpoint: one chat completion (a one-line user
 * message, the given tools, at most 16 new tokens) with the settings the episodes will use, which
 * must come back as an assistant message. `triad collect` and `triad eval --policy openai:` call it
 * before anything else, so that a wrong URL, a server that is down, a wrong model name or an
 * endpoint that answers something else fails at once instead of giving an empty dataset or a
 * table of zeros.
 * @throws PolicyEndpointCheckError (one line: URL, model and what answered: no connection, no
 *   answer within the deadline, the HTTP status and body, or the reply that is not a chat completion).
 */
export async function checkPolicyEndpoint(
  options: OpenAIPolicyOptions,
  tools: readonly ToolSchema[],
): Promise<void> {
  const probe = new OpenAIPolicy({
    ...options,
    maxTokens: 16,
    timeoutMs: options.timeoutMs ?? CHECK_TIMEOUT_MS,
  })
  try {
    await probe.act([{ role: 'user', content: 'Reply with one word: ready.' }], tools)
  } catch (err) {
    if (err instanceof PolicyEndpointError)
      throw new PolicyEndpointCheckError(probe.endpoint, options.model, err.detail, { cause: err })
    throw err
  }
}
