import type { Logger } from 'pino'
import type { ActorSystem, NatsTransport } from '../../actors/index.ts'

/** What a role needs to start: the process's actor system and NATS transport. */
export interface RoleContext {
  system: ActorSystem
  transport: NatsTransport
  run: string
  id: string
  options: Record<string, unknown>
  /** The process's structured log (pino, on stderr: the role's `logs/<role>.log` in a run). */
  logger: Logger
}

/** A started role; `stop` undoes what the role started. */
export interface RoleHandle {
  stop(): Promise<void>
}

/** The roles a worker process can take, by name. */
export type WorkerRoles = Readonly<Record<string, (ctx: RoleContext) => Promise<RoleHandle>>>
