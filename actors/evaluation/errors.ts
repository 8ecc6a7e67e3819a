/**
 * Results that cannot be averaged or compared: no values, seeds evaluated on different instances,
 * or two evaluations that do not share their instances and seeds (a paired difference needs both).
 */
export class EvaluationStatsError extends Error {
  override name = 'EvaluationStatsError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}
