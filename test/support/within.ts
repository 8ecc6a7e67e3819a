/**
 * Resolves or rejects as `p` does, or rejects after `ms` milliseconds with an error naming what was
 * awaited (`what`, or what it returns at the deadline: a message built from the state then).
 */
export async function within<T>(p: Promise<T>, ms: number, what: string | (() => string)): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  return Promise.race([
    p,
    new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`not within ${ms} ms: ${typeof what === 'string' ? what : what()}`)),
        ms,
      )
    }),
  ]).finally(() => clearTimeout(timer))
}
