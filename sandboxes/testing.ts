/**
 * What the tests of `sandboxes/` import besides its index: names no other folder needs. Only
 * `test/` imports this file (the layering test holds the other folders to `index.ts`).
 */
export {
  SandboxBusyError,
  SandboxHttpError,
  SandboxLostError,
  SandboxRequestError,
  SandboxUnreachableError,
} from './errors.ts'
export { SANDBOX_UID, SANDBOX_UID_COUNT } from './image.ts'
export { LANGUAGES, languageCommands, missingToolchain } from './languages.ts'
export { checkRequest } from './request-checks.ts'
export { sandboxReplies } from './run-code-message.ts'
export type { RunnerResult } from './runner-job.ts'
export { WarmPool, type WarmSandbox } from './warm-pool.ts'
