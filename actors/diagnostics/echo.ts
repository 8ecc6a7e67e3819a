import { EchoPing, EchoPong, MessageRegistry, QueueGroups, Subjects } from '../../protocols/index.ts'
import type { ActorSystem, Behaviour, Transport } from '../runtime/index.ts'
import { type Exposed, exposeActor } from '../runtime/index.ts'

/** The echo actor: answers `echo.ping` with `echo.pong` carrying the same fields and its name. */
export function echoBehaviour(by: string): Behaviour<{ by: string }> {
  return {
    init: () => ({ by }),
    receive: (state, message) => {
      const p = message.payload as { seq: number; sentAt: number; data: unknown }
      return EchoPong.make({ ...p, by: state.by })
    },
  }
}

/** Messages the echo actor accepts. */
export const echoAccepts = new MessageRegistry([EchoPing])
/** Replies of the echo actor. */
export const echoReplies = new MessageRegistry([EchoPong])

/**
 * Spawns an echo actor named `echo` and exposes it on `Subjects.echo(run)` in queue group `echo`,
 * registered as the NATS service `triad-echo`.
 */
export async function startEcho(
  system: ActorSystem,
  transport: Transport,
  run: string,
  by: string,
): Promise<Exposed> {
  const ref = system.spawn('echo', echoBehaviour(by))
  return exposeActor(transport, ref, {
    subject: Subjects.echo(run),
    queue: QueueGroups.echo,
    accepts: echoAccepts,
    service: { name: 'triad-echo', description: 'echo probe of a triad node', metadata: { run, by } },
  })
}
