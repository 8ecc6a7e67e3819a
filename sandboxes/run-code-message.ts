import {
  type Envelope,
  ErrorCode,
  errorReply,
  MessageRegistry,
  SandboxCodeResult,
  SandboxRunCode,
} from '../protocols/index.ts'
import type { SandboxBackend } from './backend.ts'
import { runCode } from './run-code.ts'

/** What the sandbox accepts over NATS: `sandbox.run_code`. */
export const sandboxAccepts = new MessageRegistry([SandboxRunCode])
/** What it replies: `sandbox.code_result` (or an `error` reply). */
export const sandboxReplies = new MessageRegistry([SandboxCodeResult])

/**
 * Answers one `sandbox.run_code` envelope with a `sandbox.code_result` envelope, running the code
 * on `backend` exactly as `POST /run_code` does. A refused request (bad path, oversized files) is an
 * `error` reply with code `invalid_message`; a full queue is `unavailable`. Never throws.
 */
export async function answerRunCode(message: Envelope, backend: SandboxBackend): Promise<Envelope> {
  if (message.type !== SandboxRunCode.type)
    return errorReply({
      code: ErrorCode.UnknownType,
      message: `the sandbox answers '${SandboxRunCode.type}' only, not '${message.type}'`,
    })
  const outcome = await runCode(message.payload, backend)
  if (outcome.statusCode === 200) return SandboxCodeResult.make(outcome.body)
  return errorReply({
    code: outcome.statusCode === 503 ? ErrorCode.Unavailable : ErrorCode.InvalidMessage,
    message: outcome.body.message,
    details: outcome.body.detail,
  })
}

/**
 * The sandbox as an actor behaviour (the runtime's `Behaviour` shape, with no state): each
 * `sandbox.run_code` is answered by `answerRunCode`. Spawn it with a concurrency of at least the
 * backend's slots; the backend queues the rest.
 */
export function sandboxBehaviour(backend: SandboxBackend) {
  return {
    init: () => ({}),
    receive: (_state: object, message: Envelope) => answerRunCode(message, backend),
  }
}
