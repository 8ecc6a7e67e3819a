/** The nats-server binary is missing or did not become ready. */
export class NatsServerError extends Error {
  override name = 'NatsServerError'
  constructor(
    message: string,
    readonly exitCode?: number | null,
    cause?: unknown,
  ) {
    super(message, { cause })
  }
}
