export { BackendKind, type SandboxBackend } from './backend.ts'
export { SandboxClient } from './client.ts'
export { DockerBackend, DockerMode } from './docker-backend.ts'
export {
  SandboxBusyError,
  SandboxHealthError,
  SandboxHttpError,
  SandboxImageError,
  SandboxLostError,
  SandboxRequestError,
  SandboxUnreachableError,
} from './errors.ts'
export { buildSandboxImage, SANDBOX_UID, SANDBOX_UID_COUNT } from './image.ts'
export { LANGUAGES, languageCommands, missingToolchain } from './languages.ts'
export { DEFAULT_LIMITS, type SandboxLimits } from './limits.ts'
export { LocalBackend } from './local-backend.ts'
export { checkRequest } from './request-checks.ts'
export { refusal, runCode } from './run-code.ts'
export { sandboxAccepts, sandboxBehaviour, sandboxReplies } from './run-code-message.ts'
export type { RunnerResult } from './runner-job.ts'
export { buildSandboxServer } from './server.ts'
export { WarmPool, type WarmSandbox } from './warm-pool.ts'
