import { randomUUID } from 'node:crypto'
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify'
import {
  BatcherClosedError,
  type ChatFormat,
  ConfigError,
  ContinuousBatcher,
  createRng,
  FinishReason,
  ShapeError,
  SpecialToken,
  TemplateError,
  type Transformer,
} from '../../gpu/index.ts'
import type { ToolCall } from '../../protocols/index.ts'
import { type ChatRequest, parseChatRequest } from './chat-request.ts'
import { ApiError, ApiErrorType } from './errors.ts'
import { tokenBytesOf } from './token-bytes.ts'
import { type TokenLogprob, tokenLogprob } from './token-logprobs.ts'

/** Options of `buildChatServer`. */
export interface ChatServerOptions {
  /** The model served; the caller owns it (dispose it after `close`). */
  model: Transformer
  /** Its tokenizer and chat template. */
  format: ChatFormat
  /** The model's id in `/v1/models` and the `model` a request must name. */
  name: string
  /** Most sequences decoded together by the continuous batcher (default 64). */
  maxBatch?: number
  /** Largest request body, bytes (default 16 MiB); larger bodies get HTTP 413. */
  bodyLimit?: number
  /** Seed of the seeds drawn for requests without `seed` (default 0). */
  seed?: number
  /** Log requests with pino to stderr (default false). */
  logger?: boolean
}

/** A chat server: its fastify app (not listening yet) and the batcher behind it. */
export interface ChatServer {
  app: FastifyInstance
  batcher: ContinuousBatcher
  /** Stops the HTTP server, then the batcher (requests still running are failed). */
  close(): Promise<void>
}

/** The finish reasons of a choice, as OpenAI names them. */
export const ChoiceFinish = {
  Stop: 'stop',
  Length: 'length',
  ToolCalls: 'tool_calls',
} as const
export type ChoiceFinish = (typeof ChoiceFinish)[keyof typeof ChoiceFinish]

/** The assistant message of a finished choice. */
interface ChoiceMessage {
  role: 'assistant'
  content: string | null
  /** Always null (OpenAI's field for a refusal; the model's refusals are plain content). */
  refusal: null
  tool_calls?: ToolCall[]
}

/** One generated choice. */
interface ChoiceResult {
  message: ChoiceMessage
  finish: ChoiceFinish
  /** Generated ids, the stop token included. */
  completionTokens: number
  logprobs: TokenLogprob[]
}

/** Called per token while a choice streams. */
interface ChoiceListener {
  token(piece: string, logprob: TokenLogprob | undefined): void
}

const nowSeconds = () => Math.floor(Date.now() / 1000)

/**
 * The OpenAI-compatible HTTP API of one model (fastify), on a `ContinuousBatcher`, so concurrent
 * requests (and the `n` choices of one) share forward passes:
 * - `GET /v1/models`, `GET /v1/models/:id`: the served model.
 * - `POST /v1/chat/completions`: `messages` (system, developer, user, assistant with `tool_calls`,
 *   tool), `tools` (rendered by the chat format; a reply that calls tools comes back as
 *   `tool_calls` with `finish_reason: "tool_calls"`, parsed by `ChatFormat.parseTurn`), `temperature`,
 *   `top_p`, `max_tokens`/`max_completion_tokens` (capped at the room left in the context; a reply
 *   cut there ends with `finish_reason: "length"`), `seed`, `n`, `logprobs` and `top_logprobs`
 *   (see `tokenLogprob`), `stream` (server-sent `chat.completion.chunk` events ending with
 *   `data: [DONE]`; `stream_options.include_usage` adds a last chunk with `usage`).
 * Replies are OpenAI-exact: the message carries `refusal: null`, `logprobs` entries each token's raw
 * `bytes` and distinct `top_logprobs` (`tokenLogprob`, `tokenBytesOf`).
 * Errors are OpenAI error objects `{error: {message, type, param, code}}`: 400 for an invalid field
 * (named in `param`), a parameter the server does not do ("`stop` is not supported",
 * `unsupported_parameter`) or a prompt longer than the context (`context_length_exceeded`), 404 for an
 * unknown model (`model_not_found`) or route, 413 for a body over `bodyLimit`, 415 for a body that
 * is not JSON, 422 for a conversation the chat template cannot render (an assistant tool call
 * whose arguments are not a JSON object), 503 once the server is closing.
 */
export function buildChatServer(o: ChatServerOptions): ChatServer {
  const { model, format, name } = o
  const batcher = new ContinuousBatcher(model, { maxBatch: o.maxBatch })
  const seeds = createRng(o.seed ?? 0)
  const created = nowSeconds()
  const stop = new Set(format.stopTokens)
  const bytesOf = tokenBytesOf(format)
  const app = Fastify({
    logger: o.logger ? { level: 'info' } : false,
    bodyLimit: o.bodyLimit ?? 16 * 2 ** 20,
    requestTimeout: 0,
    connectionTimeout: 0,
    keepAliveTimeout: 65_000,
    forceCloseConnections: true,
  })
  app.removeContentTypeParser('text/plain')

  const send = (reply: FastifyReply, err: ApiError) => reply.code(err.status).send(err.body())
  app.setErrorHandler((err: { statusCode?: number; message: string }, req, reply) => {
    if (err instanceof ApiError) return send(reply, err)
    const code = err.statusCode ?? 500
    const invalid = (status: number, message: string, c: string | null = null) =>
      send(reply, new ApiError(status, message, ApiErrorType.InvalidRequest, null, c))
    if (code === 415)
      return invalid(
        415,
        `content-type '${(req.headers['content-type'] ?? '(none)').slice(0, 100)}' is not supported: send application/json`,
        'unsupported_media_type',
      )
    if (code === 413) return invalid(413, `request body too large: ${err.message}`, 'request_too_large')
    if (code >= 400 && code < 500) return invalid(code, `malformed request: ${err.message}`)
    return send(reply, new ApiError(500, `internal error: ${err.message}`, ApiErrorType.Server))
  })
  app.setNotFoundHandler((req, reply) =>
    send(
      reply,
      new ApiError(
        404,
        `no route ${req.method} ${req.url.split('?')[0]}`,
        ApiErrorType.NotFound,
        null,
        'unknown_url',
      ),
    ),
  )

  const modelCard = () => ({ id: name, object: 'model', created, owned_by: 'triad' })
  app.get('/v1/models', async () => ({ object: 'list', data: [modelCard()] }))
  app.get<{ Params: { id: string } }>('/v1/models/:id', async (req, reply) => {
    if (req.params.id !== name) return send(reply, unknownModel(req.params.id, name))
    return modelCard()
  })

  /** The prompt ids of a request. @throws ApiError 400/422. */
  const promptOf = (q: ChatRequest): Int32Array => {
    let rendered: Int32Array
    try {
      rendered = format.render(q.messages, q.tools)
    } catch (err) {
      if (!(err instanceof TemplateError)) throw err
      const at = err.messageIndex ?? q.messages.findIndex((m) => m.role === 'assistant' && m.tool_calls)
      throw new ApiError(
        422,
        `the chat template cannot render the conversation: ${err.message}`,
        ApiErrorType.InvalidRequest,
        at >= 0 ? `messages[${at}]` : 'messages',
        'invalid_value',
        { cause: err },
      )
    }
    const head = format.generationPrompt()
    const prompt = new Int32Array(rendered.length + head.length)
    prompt.set(rendered)
    prompt.set(head, rendered.length)
    const { contextLength } = model.config
    if (prompt.length >= contextLength)
      throw new ApiError(
        400,
        `the prompt is ${prompt.length} tokens; this model's context is ${contextLength} tokens (it must leave room for at least one new token)`,
        ApiErrorType.InvalidRequest,
        'messages',
        'context_length_exceeded',
      )
    return prompt
  }

  /** Generates one choice; `listener` gets its tokens as they come. */
  const runChoice = async (
    q: ChatRequest,
    prompt: Int32Array,
    seed: number,
    listener?: ChoiceListener,
  ): Promise<ChoiceResult> => {
    const room = model.config.contextLength - prompt.length
    const body: number[] = []
    const logprobs: TokenLogprob[] = []
    let streamed = ''
    const gen = await batcher
      .submit(prompt, {
        maxNewTokens: Math.min(q.maxTokens ?? room, room),
        temperature: q.temperature,
        top_p: q.top_p,
        seed,
        stopTokens: format.stopTokens,
        onToken: (token, _lp, logits) => {
          if (stop.has(token)) return
          body.push(token)
          const entry = q.logprobs
            ? tokenLogprob(logits, token, q.temperature, q.topLogprobs, bytesOf)
            : undefined
          if (entry) logprobs.push(entry)
          if (!listener) return
          const visible = visibleContent(format.decode(body), q.tools.length > 0)
          const piece = visible.startsWith(streamed) ? visible.slice(streamed.length) : ''
          streamed += piece
          if (piece !== '' || entry) listener.token(piece, entry)
        },
      })
      .catch((err: unknown) => {
        if (err instanceof BatcherClosedError)
          throw new ApiError(503, 'the server is shutting down', ApiErrorType.Server, null, 'unavailable', {
            cause: err,
          })
        if (err instanceof ShapeError || err instanceof ConfigError)
          throw new ApiError(400, err.message, ApiErrorType.InvalidRequest, null, 'invalid_value', {
            cause: err,
          })
        throw err
      })
    const cut = gen.finishReason === FinishReason.Length ? ChoiceFinish.Length : ChoiceFinish.Stop
    const text = format.decode(body)
    let message: ChoiceMessage = { role: 'assistant', content: text, refusal: null }
    let finish: ChoiceFinish = cut
    if (q.tools.length > 0) {
      const parsed = format.parseTurn(gen.tokens)
      const calls = parsed.ok ? (parsed.message.tool_calls ?? []) : []
      if (parsed.ok && calls.length > 0) {
        const id = randomUUID().replaceAll('-', '').slice(0, 24)
        message = {
          role: 'assistant',
          content: parsed.message.content === '' ? null : parsed.message.content,
          refusal: null,
          tool_calls: calls.map((c, i) => ({ ...c, id: `call_${id}_${i}` })),
        }
        finish = ChoiceFinish.ToolCalls
      }
    }
    return { message, finish, completionTokens: gen.tokens.length, logprobs }
  }

  app.post('/v1/chat/completions', async (req, reply) => {
    const q = parseChatRequest(req.body)
    if (q.model !== name) throw unknownModel(q.model, name)
    const prompt = promptOf(q)
    const seed0 = q.seed ?? Math.floor(seeds.next() * 2 ** 31)
    const id = `chatcmpl-${randomUUID().replaceAll('-', '')}`
    const stamp = nowSeconds()
    const logprobsOf = (l: TokenLogprob[]) => (q.logprobs ? { content: l, refusal: null } : null)
    if (!q.stream) {
      const choices = await Promise.all(
        Array.from({ length: q.n }, (_, i) => runChoice(q, prompt, seed0 + i)),
      )
      const completion = choices.reduce((s, c) => s + c.completionTokens, 0)
      return {
        id,
        object: 'chat.completion',
        created: stamp,
        model: name,
        choices: choices.map((c, index) => ({
          index,
          message: c.message,
          logprobs: logprobsOf(c.logprobs),
          finish_reason: c.finish,
        })),
        usage: {
          prompt_tokens: prompt.length,
          completion_tokens: completion,
          total_tokens: prompt.length + completion,
        },
      }
    }
    reply.hijack()
    const raw = reply.raw
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    const event = (data: unknown) => {
      if (!raw.destroyed && !raw.writableEnded) raw.write(`data: ${JSON.stringify(data)}\n\n`)
    }
    const chunk = (choices: unknown[], extra: Record<string, unknown> = {}) =>
      event({ id, object: 'chat.completion.chunk', created: stamp, model: name, choices, ...extra })
    const delta = (
      index: number,
      d: Record<string, unknown>,
      lp: TokenLogprob[] | null,
      finish: string | null,
    ) =>
      chunk([
        { index, delta: d, logprobs: lp ? { content: lp, refusal: null } : null, finish_reason: finish },
      ])
    try {
      for (let i = 0; i < q.n; i++) delta(i, { role: 'assistant', content: '' }, null, null)
      const choices = await Promise.all(
        Array.from({ length: q.n }, async (_, index) => {
          let sent = ''
          const c = await runChoice(q, prompt, seed0 + index, {
            token: (piece, lp) => {
              sent += piece
              delta(index, { content: piece }, lp ? [lp] : null, null)
            },
          })
          const content = c.message.content ?? ''
          if (content.length > sent.length && content.startsWith(sent))
            delta(index, { content: content.slice(sent.length) }, null, null)
          if (c.message.tool_calls)
            delta(index, { tool_calls: c.message.tool_calls.map((t, k) => ({ index: k, ...t })) }, null, null)
          delta(index, {}, null, c.finish)
          return c
        }),
      )
      if (q.includeUsage) {
        const completion = choices.reduce((s, c) => s + c.completionTokens, 0)
        chunk([], {
          usage: {
            prompt_tokens: prompt.length,
            completion_tokens: completion,
            total_tokens: prompt.length + completion,
          },
        })
      }
    } catch (err) {
      const e =
        err instanceof ApiError
          ? err
          : new ApiError(500, `internal error: ${(err as Error).message}`, ApiErrorType.Server)
      event(e.body())
    }
    if (!raw.destroyed && !raw.writableEnded) raw.end('data: [DONE]\n\n')
  })

  return {
    app,
    batcher,
    close: async () => {
      await app.close()
      await batcher.close()
    },
  }
}

function unknownModel(asked: string, served: string): ApiError {
  return new ApiError(
    404,
    `the model '${asked}' does not exist; this server serves '${served}'`,
    ApiErrorType.NotFound,
    'model',
    'model_not_found',
  )
}

/**
 * The part of a reply's text so far that streams as content: without a trailing incomplete UTF-8
 * sequence (decoded as U+FFFD until its last byte comes) and, when tools are offered, only the text
 * before a tool call's opening tag (and never a partial tag at its end), as the tool calls are sent
 * parsed at the end.
 */
function visibleContent(text: string, tools: boolean): string {
  let out = text
  if (tools) {
    const open = SpecialToken.ToolCallStart
    const at = out.indexOf(open)
    if (at >= 0) out = out.slice(0, at)
    else
      for (let k = Math.min(open.length - 1, out.length); k > 0; k--)
        if (out.endsWith(open.slice(0, k))) {
          out = out.slice(0, -k)
          break
        }
  }
  while (out.endsWith('\uFFFD')) out = out.slice(0, -1)
  return out
}
