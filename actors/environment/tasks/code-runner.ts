import type { RunCodeResponse } from '../../../protocols/index.ts'
import {
  DEFAULT_LIMITS,
  LocalBackend,
  runCode,
  type SandboxBackend,
  SandboxClient,
} from '../../../sandboxes/index.ts'
import { TaskBackendError } from '../errors.ts'

/**
 * Where the `code` task runs Python: a sandbox over HTTP (`SandboxClient`, SandboxFusion's
 * `/run_code`) or a sandbox backend in this process (`runCode` on a `LocalBackend` or
 * `DockerBackend`). Both answer SandboxFusion responses.
 */
export interface CodeRunner {
  /** Where programs run, for people: the sandbox URL, or the backend and its isolation. */
  readonly where: string
  /** Runs a Python program with a wall-clock limit in seconds. */
  runPython(code: string, timeoutS: number): Promise<RunCodeResponse>
  /** Releases the backend (a runner made by `defaultCodeRunner` owns one). */
  close(): Promise<void>
}

/** A runner over a SandboxFusion-compatible HTTP sandbox. */
export function httpCodeRunner(client: SandboxClient): CodeRunner {
  return {
    where: client.url,
    runPython: (code, timeoutS) => client.runCode({ code, language: 'python', run_timeout: timeoutS }),
    close: async () => undefined,
  }
}

/**
 * A runner over a sandbox backend in this process; `owned` backends are closed with the runner. Its
 * `runPython` throws TaskBackendError when the backend refuses the run (a 4xx or 503 outcome).
 */
export function backendCodeRunner(backend: SandboxBackend, owned = false): CodeRunner {
  return {
    where: `the ${backend.kind} sandbox backend in this process (${backend.isolation} isolation)`,
    async runPython(code, timeoutS) {
      const out = await runCode({ code, language: 'python', run_timeout: timeoutS }, backend)
      if (out.statusCode !== 200)
        throw new TaskBackendError(`sandbox refused the run: ${JSON.stringify(out.body)}`)
      return out.body as RunCodeResponse
    },
    close: async () => {
      if (owned) await backend.close()
    },
  }
}

/** Where `defaultCodeRunner` runs programs, for people: `TRIAD_SANDBOX_URL`, or the local backend. */
export function defaultCodeRunnerWhere(env: NodeJS.ProcessEnv = process.env): string {
  return env.TRIAD_SANDBOX_URL || 'the local sandbox backend in this process'
}

/**
 * The default runner: the HTTP sandbox at `TRIAD_SANDBOX_URL` when set (checked at once, failing
 * loudly), else a local backend (bubblewrap where installed) with two slots.
 * @throws SandboxUnreachableError when `TRIAD_SANDBOX_URL` does not answer.
 */

export async function defaultCodeRunner(env: NodeJS.ProcessEnv = process.env): Promise<CodeRunner> {
  const url = env.TRIAD_SANDBOX_URL
  if (url) return httpCodeRunner(await SandboxClient.connect(url))
  const backend = new LocalBackend({ limits: { ...DEFAULT_LIMITS, concurrency: 2 }, warn: () => undefined })
  await backend.start()
  return backendCodeRunner(backend, true)
}
