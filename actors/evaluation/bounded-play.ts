/**
 * Many episodes with a bound on how many run at once: an endpoint or a sandbox takes only so many
 * requests, while a continuous batcher wants them all at once.
 */

/**
 * Calls `play` for every job with at most `concurrency` calls running at once (`Infinity`: all at
 * once), in job order as places free up.
 * @returns the results in job order.
 * @throws the first rejection of `play`; no job starts after it, and it is thrown once the calls
 *   already running have settled (nothing is left running behind the caller's back).
 */
export async function playBounded<J, R>(
  jobs: readonly J[],
  concurrency: number,
  play: (job: J, index: number) => Promise<R>,
): Promise<R[]> {
  if (!(concurrency >= 1)) throw new RangeError(`concurrency must be >= 1, got ${concurrency}`)
  const results: R[] = new Array(jobs.length)
  let next = 0
  let failed: { error: unknown } | undefined
  const lane = async () => {
    while (failed === undefined && next < jobs.length) {
      const i = next++
      try {
        results[i] = await play(jobs[i]!, i)
      } catch (error) {
        failed ??= { error }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(concurrency, jobs.length) }, lane))
  if (failed) throw failed.error
  return results
}
