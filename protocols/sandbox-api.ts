import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * The code sandbox API, SandboxFusion-compatible: `POST /run_code` over HTTP, and the same request
 * and response as `sandbox.run_code` / `sandbox.code_result` messages over NATS. Field names are
 * exactly SandboxFusion's (note `memory_limit_MB` with capitals).
 */

/**
 * Languages a triad sandbox runs, named as SandboxFusion names them. Closed set; a request for
 * another is refused (HTTP 422). How each is compiled and run: `sandboxes/languages.ts`.
 */
export const SandboxLanguage = {
  Python: 'python',
  Bash: 'bash',
  Nodejs: 'nodejs',
  Cpp: 'cpp',
  Java: 'java',
  Go: 'go',
  Rust: 'rust',
  Typescript: 'typescript',
} as const
export type SandboxLanguage = (typeof SandboxLanguage)[keyof typeof SandboxLanguage]
export const SANDBOX_LANGUAGES = Object.values(SandboxLanguage) as [SandboxLanguage, ...SandboxLanguage[]]

/** Status of one command (compile or run). Closed set. */
export const CommandRunStatus = {
  /** The command ran to its end (any exit code, including death by a signal). */
  Finished: 'Finished',
  /** The sandbox could not run the command (an infrastructure failure, not the code's fault). */
  Error: 'Error',
  /** The command ran past its wall-clock limit and was killed. */
  TimeLimitExceeded: 'TimeLimitExceeded',
} as const
export type CommandRunStatus = (typeof CommandRunStatus)[keyof typeof CommandRunStatus]

/** Status of a whole request. Closed set. */
export const RunStatus = {
  /** Every command finished with exit code 0. */
  Success: 'Success',
  /** A command ran past its time limit or exited non-zero. */
  Failed: 'Failed',
  /** A command has status `Error`, or the request could not be run at all. */
  SandboxError: 'SandboxError',
} as const
export type RunStatus = (typeof RunStatus)[keyof typeof RunStatus]

/** The request body of `POST /run_code` (SandboxFusion's `RunCodeRequest`). */
export const RunCodeRequestSchema = z.object({
  /** Source code of the program. */
  code: z.string(),
  /** One of `SandboxLanguage`. */
  language: z.enum(SANDBOX_LANGUAGES),
  /** Bytes given to the program on standard input (UTF-8 text); none when absent or null. */
  stdin: z.string().nullable().optional(),
  /** Wall-clock limit of the compile step, seconds (`Seconds`). */
  compile_timeout: z.number().positive().default(10),
  /** Wall-clock limit of the run step, seconds (`Seconds`). */
  run_timeout: z.number().positive().default(10),
  /** Memory limit of the program in MiB; -1 (or 0) for the server's own limit (the largest allowed).
   *  Below the language's minimum (`sandboxes/languages.ts`, 16 MiB for python) it is refused. */
  memory_limit_MB: z.number().int().min(-1).default(-1),
  /** Files written into the work dir before the run: relative path to base64 content. */
  files: z.record(z.string(), z.string().nullable()).default({}),
  /** Relative paths of files read back from the work dir after the run, returned in `files`. */
  fetch_files: z.array(z.string()).default([]),
})
/** A parsed request (defaults applied). */
export type RunCodeRequest = z.output<typeof RunCodeRequestSchema>
/** A request as a caller writes it (defaults optional). */
export type RunCodeRequestInput = z.input<typeof RunCodeRequestSchema>

/** The result of one command (SandboxFusion's `CommandRunResult`). */
export const CommandRunResultSchema = z.object({
  status: z.enum([CommandRunStatus.Finished, CommandRunStatus.Error, CommandRunStatus.TimeLimitExceeded]),
  /** Wall-clock time of the command, seconds (`Seconds`); null when it did not start. */
  execution_time: z.number().nullable(),
  /** Exit code; a negative signal number when killed by a signal (-9 for SIGKILL); null when it did
   *  not finish (time limit, sandbox error). */
  return_code: z.number().int().nullable(),
  /** Standard output decoded as UTF-8 (invalid bytes replaced by U+FFFD), cut at the output limit. */
  stdout: z.string().nullable(),
  /** Standard error, as `stdout`. */
  stderr: z.string().nullable(),
})
export type CommandRunResult = z.infer<typeof CommandRunResultSchema>

/** The response body of `POST /run_code` (SandboxFusion's `RunCodeResponse`). */
export const RunCodeResponseSchema = z.object({
  /** The status rule: a command with status `Error` gives `SandboxError`; a time limit or a non-zero
   *  exit gives `Failed`; otherwise `Success`. */
  status: z.enum([RunStatus.Success, RunStatus.Failed, RunStatus.SandboxError]),
  /** A sentence for a person: empty on success, else what went wrong (limits hit, errors). */
  message: z.string(),
  /** The compile step; null for interpreted languages. */
  compile_result: CommandRunResultSchema.nullable(),
  /** The run step; null when it did not start (compile failed, bad request). */
  run_result: CommandRunResultSchema.nullable(),
  /** The fetched files: relative path to base64 content (missing files are left out). */
  files: z.record(z.string(), z.string()),
})
export type RunCodeResponse = z.infer<typeof RunCodeResponseSchema>

/**
 * Applies the status rule to the results of a request's commands.
 * Any command with status `Error` gives `SandboxError`; a time limit or a non-zero exit gives
 * `Failed`; otherwise `Success`.
 */
export function statusOf(results: readonly (CommandRunResult | null)[]): RunStatus {
  const ran = results.filter((r): r is CommandRunResult => r !== null)
  if (ran.some((r) => r.status === CommandRunStatus.Error)) return RunStatus.SandboxError
  if (ran.some((r) => r.status === CommandRunStatus.TimeLimitExceeded || r.return_code !== 0))
    return RunStatus.Failed
  return RunStatus.Success
}

/** `GET /health` (and `GET /v1/ping`, SandboxFusion's) reply. */
export const SandboxHealthSchema = z.object({
  status: z.literal('ok'),
  /** `docker` or `local`. */
  backend: z.string(),
  /** What isolation the backend gives (`docker`, `bwrap`, `rlimits`). */
  isolation: z.string(),
  languages: z.array(z.string()),
  /** Requests running now. */
  running: z.number().int(),
  /** Requests waiting for a slot. */
  queued: z.number().int(),
})
export type SandboxHealth = z.infer<typeof SandboxHealthSchema>

/** `sandbox.run_code`: run code over NATS (payload as the HTTP request body). */
export const SandboxRunCode = defineMessage('sandbox.run_code', RunCodeRequestSchema)

/** Reply to `sandbox.run_code` (payload as the HTTP response body). */
export const SandboxCodeResult = defineMessage('sandbox.code_result', RunCodeResponseSchema)

/** Every message type of the sandbox API. */
export const sandboxMessages = [SandboxRunCode, SandboxCodeResult] as const
