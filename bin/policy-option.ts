import { UsageError } from './errors.ts'

/** The prefix of `--policy` for a model behind an OpenAI-compatible endpoint. */
export const OPENAI_POLICY_PREFIX = 'openai:'

/**
 * The endpoint URL of `--policy openai:URL` (`triad collect`, `triad eval`): an http(s) base URL
 * such as `http://127.0.0.1:8000/v1`, or the full `/chat/completions` URL.
 * @throws UsageError for a value without the `openai:` prefix or whose URL is not http(s).
 */
export function openAIPolicyUrl(policy: string): string {
  if (!policy.startsWith(OPENAI_POLICY_PREFIX))
    throw new UsageError(
      `--policy ${policy}: use openai:URL, the base URL of an OpenAI-compatible endpoint (openai:http://127.0.0.1:8000/v1)`,
    )
  const url = policy.slice(OPENAI_POLICY_PREFIX.length)
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch (err) {
    throw new UsageError(`--policy ${policy}: '${url}' is not a URL`, { cause: err })
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')
    throw new UsageError(`--policy ${policy}: the URL must be http or https, got ${parsed.protocol}`)
  return url
}
