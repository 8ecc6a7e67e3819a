import {
  type AssistantMessage,
  type ChatMessage,
  EnvCancel,
  EnvCancelled,
  EnvInteract,
  EnvInteracted,
  EnvStart,
  EnvStarted,
  MessageRegistry,
  type Millis,
  type PayloadOf,
  Subjects,
  type ToolSchema,
} from '../../protocols/index.ts'
import type { Transport } from '../runtime/index.ts'

const startReplies = new MessageRegistry([EnvStarted])
const interactReplies = new MessageRegistry([EnvInteracted])
const cancelReplies = new MessageRegistry([EnvCancelled])

/** A started environment session: its sticky worker subject and first messages. */
export interface EnvSession {
  session: string
  /** Subject of the worker that owns the session (sticky). */
  worker: string
  messages: ChatMessage[]
  tools: ToolSchema[]
}

/** The outcome of one `interact`. */
export type EnvStep = PayloadOf<typeof EnvInteracted>

/** The environment function-call API from the caller's side (AgentRL's unified API). */
export class EnvClient {
  constructor(
    private readonly transport: Transport,
    private readonly run: string,
    private readonly timeoutMs: Millis = 30_000,
  ) {}

  /**
   * Starts an episode through the controller. `signal`, in every method, gives the request up
   * when aborted (RequestAbortedError).
   * @throws RemoteError (unknown task, no worker), RequestTimeoutError, NoRespondersError,
   *   RequestAbortedError.
   */
  async start(request: PayloadOf<typeof EnvStart>, signal?: AbortSignal): Promise<EnvSession> {
    const reply = await this.transport.request(Subjects.envStart(this.run), EnvStart.make(request), {
      timeoutMs: this.timeoutMs,
      replies: startReplies,
      signal,
    })
    return reply.payload as EnvSession
  }

  /** Sends the policy's assistant message to the session's worker. */
  async interact(session: EnvSession, message: AssistantMessage, signal?: AbortSignal): Promise<EnvStep> {
    const reply = await this.transport.request(
      session.worker,
      EnvInteract.make({ session: session.session, message }),
      {
        timeoutMs: this.timeoutMs,
        replies: interactReplies,
        signal,
      },
    )
    return reply.payload as EnvStep
  }

  /**
   * Ends a session; errors are ignored (the worker may already be gone; a session whose cancel was
   * given up expires on its worker when idle).
   */
  async cancel(session: EnvSession, signal?: AbortSignal): Promise<void> {
    await this.transport
      .request(session.worker, EnvCancel.make({ session: session.session }), {
        timeoutMs: 5_000,
        replies: cancelReplies,
        signal,
      })
      .catch(() => undefined)
  }
}
