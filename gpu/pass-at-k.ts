import { ConfigError } from './errors.ts'

/** A mean over task instances with its standard error. */
export interface Estimate {
  /** The mean over instances. */
  mean: number
  /** Standard error of the mean: sample std (n - 1) over instances / sqrt(instances); 0 for one instance. */
  stderr: number
  /** Number of instances averaged. */
  instances: number
}

function estimate(values: readonly number[]): Estimate {
  const n = values.length
  if (n === 0) throw new ConfigError('instances', 0, 'need at least one instance')
  const mean = values.reduce((s, v) => s + v, 0) / n
  if (n === 1) return { mean, stderr: 0, instances: 1 }
  const variance = values.reduce((s, v) => s + (v - mean) ** 2, 0) / (n - 1)
  return { mean, stderr: Math.sqrt(variance / n), instances: n }
}

function checkCounts(n: number, c: number, k: number): void {
  if (!Number.isInteger(n) || n < 1) throw new ConfigError('n', n, 'must be an integer >= 1')
  if (!Number.isInteger(c) || c < 0 || c > n)
    throw new ConfigError('c', c, `must be an integer in [0, n = ${n}]`)
  if (!Number.isInteger(k) || k < 1 || k > n)
    throw new ConfigError('k', k, `must be an integer in [1, n = ${n}]`)
}

/**
 * Unbiased pass@k of one instance (Chen et al., "Evaluating Large Language Models Trained on
 * Code", arXiv 2107.03374, eq. 1): `1 - C(n-c, k) / C(n, k)` from `n` samples with `c` successes,
 * computed as the stable product `1 - prod_{i=n-c+1}^{n} (1 - k/i)`.
 * @throws ConfigError unless `0 <= c <= n` and `1 <= k <= n` are integers.
 */
export function passAtK(n: number, c: number, k: number): number {
  checkCounts(n, c, k)
  if (n - c < k) return 1 // every k-subset holds a success
  let fail = 1
  for (let i = n - c + 1; i <= n; i++) fail *= 1 - k / i // C(n-c, k) / C(n, k) = prod (1 - k/i)
  return 1 - fail
}

/**
 * pass@k over instances: the mean of `passAtK(n_j, c_j, k)` with its standard error.
 * @param results per instance, `{n, c}`: samples drawn and successes among them.
 * @throws ConfigError on an empty list or bad counts.
 */
export function passAtKOver(results: readonly { n: number; c: number }[], k: number): Estimate {
  return estimate(results.map((r) => passAtK(r.n, r.c, k)))
}

/**
 * avg@k (DemyAgent, AgentRL evaluation): mean success over the k samples of each instance,
 * then the mean over instances, with its standard error.
 * @param successes per instance, k outcomes each (`true`/1 = success); instances may differ in k.
 * @throws ConfigError on an empty list or an instance with no samples.
 */
export function avgAtK(successes: readonly (readonly (boolean | number)[])[]): Estimate {
  return estimate(
    successes.map((s, j) => {
      if (s.length === 0) throw new ConfigError(`successes[${j}]`, '[]', 'needs at least one sample')
      return s.reduce<number>((acc, v) => acc + (v ? 1 : 0), 0) / s.length // mean_k success
    }),
  )
}
