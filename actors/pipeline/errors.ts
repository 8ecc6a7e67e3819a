/** The trajectory stream stayed full until the publish deadline (the learner is not consuming). */
export class BufferFullError extends Error {
  override name = 'BufferFullError'
  constructor(
    readonly stream: string,
    readonly waitedMs: number,
  ) {
    super(`trajectory buffer ${stream} stayed full for ${waitedMs} ms: is the learner running?`)
  }
}
