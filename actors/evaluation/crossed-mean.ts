import { EvaluationStatsError } from './errors.ts'

/** A mean over seeds and instances with its standard error. */
export interface CrossedEstimate {
  /** The mean over every (seed, instance) cell. */
  mean: number
  /** Standard error of `mean` (see `crossedMean`); 0 for a single cell. */
  stderr: number
  /** Seeds (rows) averaged. */
  seeds: number
  /** Instances (columns) averaged. */
  instances: number
}

/**
 * The mean of a seeds x instances table and its standard error, counting both sources of noise:
 * a seed is one training run (its effect is shared by every instance it is evaluated on) and the
 * instances are the same held-out ones for every seed (an instance's effect is shared by every
 * seed). This is the two-way crossed random-effects model without replication,
 * `x_si = mu + a_s + b_i + e_si` (Searle, Casella & McCulloch, "Variance Components", 1992, §4.6),
 * for which `Var(mean) = sigma_a^2 / S + sigma_b^2 / I + sigma_e^2 / (S I)`, estimated without
 * bias from the mean squares (expected mean squares `E[MS_seed] = sigma_e^2 + I sigma_a^2`,
 * `E[MS_inst] = sigma_e^2 + S sigma_b^2`, `E[MS_err] = sigma_e^2`):
 *
 *   `se^2 = (MS_seed + MS_inst - MS_err) / (S I)`
 *
 * the same as the two-way cluster-robust variance of a mean (Cameron, Gelbach & Miller, "Robust
 * inference with multiway clustering", JBES 2011, eq. 2.11: `V_seed + V_inst - V_cell`, with
 * small-sample factors). Each mean square over `S I` estimates a part of that variance
 * (`E[MS_seed] / (S I) = sigma_a^2 / S + sigma_e^2 / (S I)`, likewise the others), so none may
 * exceed it; the estimate, which can come out smaller (even negative) when an effect's mean square
 * falls under the residual's, is bounded below by them:
 * `se^2 = max(MS_seed + MS_inst - MS_err, MS_seed, MS_inst, MS_err) / (S I)`.
 * With one seed it is the standard error over instances, `sd_i / sqrt(I)` (sample std, `I - 1`);
 * with one instance the one over seeds.
 * @param values `[seeds][instances]`, every row the same length (the same instances in the same order).
 * @throws EvaluationStatsError for an empty table or rows of different lengths.
 */
export function crossedMean(values: readonly (readonly number[])[]): CrossedEstimate {
  const S = values.length
  const I = values[0]?.length ?? 0
  if (S === 0 || I === 0) throw new EvaluationStatsError('a mean needs at least one seed and one instance')
  values.forEach((row, s) => {
    if (row.length !== I)
      throw new EvaluationStatsError(
        `seed row ${s} has ${row.length} instances, row 0 has ${I}: every seed must be evaluated on the same instances`,
      )
  })
  const N = S * I
  const mean = values.reduce((acc, row) => acc + row.reduce((a, v) => a + v, 0), 0) / N
  const seedMeans = values.map((row) => row.reduce((a, v) => a + v, 0) / I)
  const instanceMeans = Array.from({ length: I }, (_, i) => values.reduce((a, row) => a + row[i]!, 0) / S)
  const msSeed = S > 1 ? (I * seedMeans.reduce((a, m) => a + (m - mean) ** 2, 0)) / (S - 1) : 0 // MS_seed = I sum_s (a_s - m)^2 / (S - 1)
  const msInst = I > 1 ? (S * instanceMeans.reduce((a, m) => a + (m - mean) ** 2, 0)) / (I - 1) : 0 // MS_inst = S sum_i (b_i - m)^2 / (I - 1)
  let variance: number
  if (S === 1 || I === 1)
    variance = (msSeed + msInst) / N // one-way: sd^2 / n over the one axis
  else {
    let ssErr = 0
    for (let s = 0; s < S; s++)
      for (let i = 0; i < I; i++) ssErr += (values[s]![i]! - seedMeans[s]! - instanceMeans[i]! + mean) ** 2
    const msErr = ssErr / ((S - 1) * (I - 1)) // MS_err = sum (x - a_s - b_i + m)^2 / ((S - 1)(I - 1))
    variance = Math.max(msSeed + msInst - msErr, msSeed, msInst, msErr) / N // se^2 = (MS_seed + MS_inst - MS_err) / (S I), bounded below
  }
  return { mean, stderr: Math.sqrt(variance), seeds: S, instances: I }
}
