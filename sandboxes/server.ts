import Fastify, { type FastifyInstance } from 'fastify'
import { RunStatus, SANDBOX_LANGUAGES, type SandboxHealth } from '../protocols/index.ts'
import type { SandboxBackend } from './backend.ts'
import { installedLanguages } from './languages.ts'
import { refusal, runCode } from './run-code.ts'
import { utf8BodyText } from './unicode-text.ts'

/** Options of the HTTP service. */
export interface SandboxServerOptions {
  backend: SandboxBackend
  /** Largest request body, bytes (default 32 MiB); larger bodies get HTTP 413. */
  bodyLimit?: number
  /** Log requests with pino to stderr (default false). */
  logger?: boolean
}

/**
 * The SandboxFusion-compatible HTTP service (fastify):
 * - `POST /run_code`: run code (request and response as `protocols/sandbox-api.ts`);
 *   200 with the result, 400 malformed JSON, 413 body too large, 415 not JSON, 422 invalid request or
 *   unsupported language, 503 queue full.
 * - `GET /health`: backend, isolation, languages (those whose toolchain is installed), running and
 *   queued jobs.
 * - `GET /v1/ping`: `pong` (SandboxFusion's liveness check).
 * The backend must be started; `close()` on the app does not close the backend.
 */
export function buildSandboxServer(o: SandboxServerOptions): FastifyInstance {
  const app = Fastify({
    logger: o.logger ? { level: 'info' } : false,
    bodyLimit: o.bodyLimit ?? 32 * 2 ** 20,
    // Long programs and deep queues are normal: never cut a request on the server side.
    requestTimeout: 0,
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    forceCloseConnections: true,
  })
  const backend = o.backend
  // JSON only: fastify's built-in text/plain parser would hand a string body to validation (422);
  // without it any other content type is answered 415.
  app.removeContentTypeParser('text/plain')
  // JSON as fastify parses it, but a body byte that is not UTF-8 becomes a lone surrogate (not a
  // silent U+FFFD), so the request checks refuse the field that held it with 422.
  const json = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (req, body, done) =>
    json(req, utf8BodyText(body as Buffer), done),
  )

  app.setErrorHandler((err: { statusCode?: number; message: string }, req, reply) => {
    const code = err.statusCode ?? 500
    if (code === 415)
      return reply.code(415).send({
        status: RunStatus.SandboxError,
        message: `content-type '${(req.headers['content-type'] ?? '(none)').slice(0, 100)}' is not supported: send application/json`,
      })
    if (code === 413) return reply.code(413).send(refusal(413, `request body too large: ${err.message}`).body)
    if (code === 400) return reply.code(400).send(refusal(400, `malformed request: ${err.message}`).body)
    if (code >= 400 && code < 500)
      return reply.code(code).send({ status: RunStatus.SandboxError, message: err.message })
    return reply.code(500).send({ status: RunStatus.SandboxError, message: `internal error: ${err.message}` })
  })

  app.post('/run_code', async (req, reply) => {
    const outcome = await runCode(req.body, backend)
    return reply.code(outcome.statusCode).send(outcome.body)
  })

  const health = (): SandboxHealth => {
    const s = backend.stats()
    return {
      status: 'ok',
      backend: backend.kind,
      isolation: backend.isolation,
      languages: SANDBOX_LANGUAGES.filter((l) => installedLanguages().has(l)),
      running: s.running,
      queued: s.queued,
    }
  }
  app.get('/health', async () => health())
  app.get('/v1/ping', async (_req, reply) => reply.type('text/plain').send('pong'))
  return app
}
