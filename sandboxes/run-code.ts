import {
  type RunCodeRequest,
  RunCodeRequestSchema,
  type RunCodeResponse,
  RunStatus,
  SANDBOX_LANGUAGES,
} from '../protocols/index.ts'
import type { SandboxBackend } from './backend.ts'
import { SandboxBusyError, SandboxRequestError } from './errors.ts'
import { errorResult, responseOf } from './runner-job.ts'

/** The body of a refused request (HTTP 4xx/503): SandboxFusion's status word plus the reason. */
export interface RefusalBody {
  status: typeof RunStatus.SandboxError
  message: string
  /** Schema issues, `{path, message}` each, for a request that fails validation. */
  detail?: { path: string; message: string }[]
}

/** The outcome of one `/run_code` call: an HTTP status code and the body. */
export type RunCodeOutcome =
  | { statusCode: 200; body: RunCodeResponse }
  | { statusCode: 400 | 413 | 422 | 503; body: RefusalBody }

/** A refusal of a request that never ran. */
export function refusal(statusCode: 400 | 413 | 422 | 503, message: string, detail?: RefusalBody['detail']) {
  const body: RefusalBody = { status: RunStatus.SandboxError, message }
  if (detail) body.detail = detail
  return { statusCode, body } as const
}

/**
 * Validates a decoded request body (SandboxFusion's `RunCodeRequest`).
 * @returns the parsed request, or the refusal outcome (422: missing field, wrong type, unsupported language).
 */
export function parseRunCodeRequest(
  body: unknown,
): { ok: true; request: RunCodeRequest } | { ok: false; outcome: RunCodeOutcome } {
  const parsed = RunCodeRequestSchema.safeParse(body)
  if (parsed.success) return { ok: true, request: parsed.data }
  const detail = parsed.error.issues.map((i) => ({ path: i.path.map(String).join('.'), message: i.message }))
  const lang = (body as { language?: unknown } | null)?.language
  const message =
    typeof lang === 'string' && !(SANDBOX_LANGUAGES as readonly string[]).includes(lang)
      ? `unsupported language '${lang}'; supported: ${SANDBOX_LANGUAGES.join(', ')}`
      : `invalid request: ${detail.map((d) => `${d.path || '(body)'}: ${d.message}`).join('; ')}`
  return { ok: false, outcome: refusal(422, message, detail) }
}

/**
 * Runs one `/run_code` request on a backend: validate, run, apply the status rule.
 * Never throws: a bad request is a 4xx outcome, a full queue 503, an infrastructure failure a 200
 * with status `SandboxError` (as SandboxFusion answers).
 */
export async function runCode(body: unknown, backend: SandboxBackend): Promise<RunCodeOutcome> {
  const parsed = parseRunCodeRequest(body)
  if (!parsed.ok) return parsed.outcome
  try {
    return { statusCode: 200, body: responseOf(await backend.execute(parsed.request)) }
  } catch (err) {
    if (err instanceof SandboxRequestError) return refusal(err.statusCode === 413 ? 413 : 422, err.message)
    if (err instanceof SandboxBusyError) return refusal(503, err.message)
    const message = `sandbox failure: ${(err as Error).message}`
    return {
      statusCode: 200,
      body: {
        status: RunStatus.SandboxError,
        message,
        compile_result: null,
        run_result: errorResult(message),
        files: {},
      },
    }
  }
}
