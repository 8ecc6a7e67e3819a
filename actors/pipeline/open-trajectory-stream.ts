import type { Clock, Transport } from '../runtime/index.ts'
import { InProcessTransport, NatsTransport } from '../runtime/index.ts'
import {
  ensureInProcessTrajectoryStream,
  InProcessTrajectoryConsumer,
  InProcessTrajectoryPublisher,
} from './in-process-trajectory-stream.ts'
import {
  ensureJetStreamTrajectoryStream,
  JetStreamTrajectoryConsumer,
  JetStreamTrajectoryPublisher,
} from './jetstream-trajectory-stream.ts'
import type { TrajectoryConsumer, TrajectoryPublisher, TrajectoryStreamOptions } from './trajectory-stream.ts'

/** The transports that carry a trajectory stream, for the error of any other. */
function unsupported(transport: Transport): Error {
  return new TypeError(`no trajectory stream on a '${transport.kind}' transport (known: nats, in-process)`)
}

/**
 * Creates (or updates) the run's trajectory stream on the transport's medium: a JetStream stream
 * over NATS, an in-process buffer shared by every role on an `InProcessTransport`.
 * @returns the stream's name.
 */
export async function ensureTrajectoryStream(
  transport: Transport,
  options: TrajectoryStreamOptions,
): Promise<string> {
  if (transport instanceof NatsTransport) return ensureJetStreamTrajectoryStream(transport.nc, options)
  if (transport instanceof InProcessTransport) return ensureInProcessTrajectoryStream(transport, options)
  throw unsupported(transport)
}

/** A publisher into the run's trajectory stream on the transport's medium. */
export function openTrajectoryPublisher(
  transport: Transport,
  run: string,
  clock?: Clock,
): TrajectoryPublisher {
  if (transport instanceof NatsTransport) return new JetStreamTrajectoryPublisher(transport.nc, run, clock)
  if (transport instanceof InProcessTransport) return new InProcessTrajectoryPublisher(transport, run, clock)
  throw unsupported(transport)
}

/**
 * The learner's consumer of the run's trajectory stream on the transport's medium.
 * @throws when the stream does not exist (JetStream's "stream not found", or
 *   `TrajectoryStreamNotFoundError` in process).
 */
export async function openTrajectoryConsumer(
  transport: Transport,
  run: string,
  clock?: Clock,
): Promise<TrajectoryConsumer> {
  if (transport instanceof NatsTransport) return JetStreamTrajectoryConsumer.open(transport.nc, run, clock)
  if (transport instanceof InProcessTransport) return InProcessTrajectoryConsumer.open(transport, run, clock)
  throw unsupported(transport)
}
