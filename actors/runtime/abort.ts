/**
 * `promise`, or a rejection with `onAbort()` as soon as `signal` aborts (at once when it already
 * has). The work behind `promise` goes on; its outcome is then ignored.
 */
export function unlessAborted<T>(
  promise: Promise<T>,
  signal: AbortSignal | undefined,
  onAbort: () => Error,
): Promise<T> {
  if (!signal) return promise
  if (signal.aborted) {
    promise.catch(() => undefined)
    return Promise.reject(onAbort())
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => reject(onAbort())
    signal.addEventListener('abort', abort, { once: true })
    promise.then(
      (v) => {
        signal.removeEventListener('abort', abort)
        resolve(v)
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort)
        reject(err)
      },
    )
  })
}
