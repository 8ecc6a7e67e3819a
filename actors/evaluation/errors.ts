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

/**
 * A broken invariant of an evaluation: a bug in its caller, never bad input (an agentic task that
 * is neither an agent nor an MCP task).
 */
export class EvaluationInvariantError extends Error {
  override name = 'EvaluationInvariantError'
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
  }
}
