import { GatewayHttpError } from './errors.ts'

/** An episode's reward as the agent reported it. */
export interface EpisodeReward {
  /** The outcome reward the learner trains on: the number, or the sum of the named rewards. */
  reward: number
  /** The named rewards (each also a metric `reward/named/<name>` of the trajectory); empty for a plain number. */
  named: Record<string, number>
}

const finite = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v)

/**
 * The body of `POST /sessions/{id}/reward`: a JSON number (`1`), `{"reward": 1}`, or
 * `{"reward": {"correct": 1, "format": 0.2}}` (named rewards, summed).
 * @throws GatewayHttpError 422 when a reward is not a finite number (`"1"`, `null`, `1e999`), or
 *   the body has another shape.
 */
export function parseEpisodeReward(body: unknown): EpisodeReward {
  const value =
    typeof body === 'object' && body !== null && !Array.isArray(body)
      ? (body as { reward?: unknown }).reward
      : body
  if (finite(value)) return { reward: value, named: {} }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    const named: Record<string, number> = {}
    for (const [k, v] of Object.entries(value)) {
      if (!finite(v))
        throw new GatewayHttpError(
          422,
          'invalid_reward',
          `reward.${k} is ${JSON.stringify(v) ?? String(v)}, not a finite number`,
          `reward.${k}`,
        )
      named[k] = v
    }
    if (Object.keys(named).length === 0)
      throw new GatewayHttpError(
        422,
        'invalid_reward',
        'reward is an empty map: name at least one reward',
        'reward',
      )
    return { reward: Object.values(named).reduce((s, v) => s + v, 0), named }
  }
  const shown = typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? 'absent')
  throw new GatewayHttpError(
    422,
    'invalid_reward',
    `reward is ${shown}, not a finite number: send a number, {"reward": <number>} or {"reward": {"<name>": <number>}}`,
    'reward',
  )
}
