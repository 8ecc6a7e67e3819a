import { randomBytes, randomUUID } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { type ChatFormat, TemplateError } from '../../gpu/index.ts'
import type { AssistantMessage, MetricValues, PayloadOf, PolicyGenerate } from '../../protocols/index.ts'
import type { GeneratedTurn } from '../rollout/index.ts'
import { episodeSeeds } from '../runtime/index.ts'
import { parseGatewayRequest, type RunSampling } from './chat-request.ts'
import { completionChunks, completionObject } from './completion-reply.ts'
import { parseEpisodeReward } from './episode-reward.ts'
import { AgentFailure, ContextFullError, GatewayHttpError } from './errors.ts'
import { GatewaySession, type SessionOptions } from './gateway-session.ts'

/** The session header of `POST /v1/chat/completions` (the other way is the path `/sessions/{id}/v1/...`). */
export const SESSION_HEADER = 'x-triad-session'

/** What generates a turn: the run's policy router (fresh and stale engines as `pipeline.rho` says). */
export interface TurnGenerator {
  generate(request: PayloadOf<typeof PolicyGenerate>, signal?: AbortSignal): Promise<GeneratedTurn>
}

/** Settings of the gateway. */
export interface GatewayOptions {
  policy: TurnGenerator
  /** The policy's tokenizer and chat template. */
  chat: ChatFormat
  /** The model's context length, tokens. */
  contextLength: number
  /** The run's sampling (`pipeline.temperature`, `pipeline.top_p`). */
  sampling: RunSampling
  /** The bearer key agents must send (default: 32 random bytes, hex). */
  apiKey?: string
  /** Interface to listen on (default 127.0.0.1: agents run on the rollout's machine). */
  host?: string
  /** Port (default 0: a free one). */
  port?: number
  /** Most chat calls in flight over every session; more get 429 (default 256). */
  maxInFlight?: number
  /** Most chat calls in flight or waiting per session; more get 429 (default 4). */
  maxSessionInFlight?: number
  /** `model` of the replies and of `GET /v1/models` (default `triad-policy`). */
  model?: string
  /** Most bytes of a request body (default 4 MiB); more get 413. */
  maxBodyBytes?: number
}

/** Counters of the gateway since start. */
export interface GatewayStats {
  /** Episodes opened (`openSession`): each ends rewarded or dropped with a reason, or is still open. */
  opened: number
  calls: number
  /** Refusals by HTTP status. */
  refused: Record<string, number>
  /** Calls that started a new trained segment, by reason. */
  segmentBreaks: Record<string, number>
  rewarded: number
  dropped: Record<string, number>
  /** The most episodes open at once since the gateway started (a high-water mark, episodes). */
  peakOpen: number
}

/** How many ended session ids are kept, so that a late call gets 409 rather than 404. */
const ENDED_KEPT = 65_536

/**
 * The agent gateway (docs/gateway.md): an OpenAI-compatible HTTP server in front of
 * the run's policy engines, for agent programs that own their loop. Routes:
 *
 * - `POST /v1/chat/completions` with header `x-triad-session: <id>`, or
 *   `POST /sessions/{id}/v1/chat/completions` (so `baseURL = <url>/sessions/<id>/v1` needs no
 *   header): one assistant turn, `stream: true` as server-sent events, tools and `tool_calls`
 *   as OpenAI's. Recorded token in, token out (`EpisodeRecorder`).
 * - `POST /sessions/{id}/reward` with a number, `{"reward": n}` or `{"reward": {"name": n}}`:
 *   ends and rewards the episode.
 * - `GET /v1/models` (or under `/sessions/{id}`): the one model.
 *
 * Every route needs `Authorization: Bearer <apiKey>` (401). Refusals, in OpenAI's error shape:
 * unknown session 404 naming it; a call after the episode's end 409; more than `maxInFlight`
 * calls in flight, or `maxSessionInFlight` in one session, 429 with `Retry-After`; a reward that
 * is not a finite number 422; a conversation past the context 400 `context_length_exceeded`.
 */
export class Gateway {
  readonly stats: GatewayStats = {
    opened: 0,
    calls: 0,
    refused: {},
    segmentBreaks: {},
    rewarded: 0,
    dropped: {},
    peakOpen: 0,
  }
  readonly apiKey: string
  private readonly sessions = new Map<string, GatewaySession>()
  private readonly endedIds = new Map<string, string>()
  private inFlight = 0
  private readonly server = createServer((req, res) => {
    this.handle(req, res).catch((err) => this.fail(res, err))
  })
  private base = ''

  private constructor(private readonly o: GatewayOptions) {
    this.apiKey = o.apiKey ?? randomBytes(32).toString('hex')
    this.server.keepAliveTimeout = 5_000
  }

  /**
   * Starts a gateway listening on `options.host:options.port`.
   * @throws the listen error (`EADDRINUSE`).
   */
  static async start(options: GatewayOptions): Promise<Gateway> {
    const g = new Gateway(options)
    await new Promise<void>((resolve, reject) => {
      g.server.once('error', reject)
      g.server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
        g.server.off('error', reject)
        resolve()
      })
    })
    const a = g.server.address() as AddressInfo
    g.base = `http://${a.family === 'IPv6' ? `[${a.address}]` : a.address}:${a.port}`
    return g
  }

  /** `http://host:port`, the gateway's root. */
  get url(): string {
    return this.base
  }

  /** The OpenAI base URL of a session: `<url>/sessions/<id>/v1`. */
  baseUrlOf(session: string): string {
    return `${this.base}/sessions/${encodeURIComponent(session)}/v1`
  }

  /** Episodes open now. */
  get openSessions(): number {
    return this.sessions.size
  }

  /** Opens an episode; its id goes to the agent. */
  openSession(options: SessionOptions): GatewaySession {
    const id = randomUUID()
    const s = new GatewaySession(id, options, this.o.chat, this.o.contextLength, (done) => {
      this.sessions.delete(done.id)
      this.endedIds.set(done.id, done.endedAs ?? 'ended')
      if (this.endedIds.size > ENDED_KEPT) this.endedIds.delete(this.endedIds.keys().next().value!)
      if (done.endedAs === 'rewarded') this.stats.rewarded++
      else this.stats.dropped[done.endedAs!] = (this.stats.dropped[done.endedAs!] ?? 0) + 1
      for (const [k, v] of Object.entries(done.recorder.breaks))
        this.stats.segmentBreaks[k] = (this.stats.segmentBreaks[k] ?? 0) + v
    })
    setMaxListeners(0, s.halt.signal)
    this.sessions.set(id, s)
    this.stats.opened++
    this.stats.peakOpen = Math.max(this.stats.peakOpen, this.sessions.size)
    return s
  }

  /**
   * Metric values (`gateway/...`): episodes opened, open now, the most open at once so far, rewarded and dropped by reason
   * (`opened = open_episodes + rewarded + sum of dropped`), calls, refusals by status, segment breaks.
   */
  metrics(): MetricValues {
    const out: MetricValues = {
      'gateway/opened': this.stats.opened,
      'gateway/calls': this.stats.calls,
      'gateway/open_episodes': this.sessions.size,
      'gateway/peak_open_episodes': this.stats.peakOpen,
      'gateway/rewarded': this.stats.rewarded,
    }
    for (const [k, v] of Object.entries(this.stats.refused)) out[`gateway/refused/${k}`] = v
    for (const [k, v] of Object.entries(this.stats.segmentBreaks)) out[`gateway/segment_breaks/${k}`] = v
    for (const [k, v] of Object.entries(this.stats.dropped)) out[`gateway/dropped/${k}`] = v
    return out
  }

  /** Stops listening; every open episode is dropped as `agent_stopped` (`reason`), calls in flight give up. */
  async close(reason = 'the gateway stopped'): Promise<void> {
    for (const s of [...this.sessions.values()]) s.drop(AgentFailure.Stopped, reason)
    this.server.closeAllConnections()
    await new Promise<void>((resolve) => this.server.close(() => resolve()))
  }

  private session(id: string): GatewaySession {
    const s = this.sessions.get(id)
    if (s) return s
    const ended = this.endedIds.get(id)
    if (ended)
      throw new GatewayHttpError(
        409,
        'episode_ended',
        `episode '${id}' has ended (${ended}): it takes no more calls`,
      )
    throw new GatewayHttpError(404, 'session_not_found', `no episode with session id '${id}' on this gateway`)
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://gateway')
    const m = /^\/sessions\/([^/]+)(\/.*)$/.exec(url.pathname)
    const sessionInPath = m ? decodeURIComponent(m[1]!) : undefined
    const route = m ? m[2]! : url.pathname
    if (req.headers.authorization !== `Bearer ${this.apiKey}`)
      throw new GatewayHttpError(
        401,
        'invalid_api_key',
        'missing or wrong API key: send Authorization: Bearer <TRIAD_API_KEY>',
      )
    if (req.method === 'GET' && route === '/v1/models')
      return this.json(res, 200, {
        object: 'list',
        data: [{ id: this.model, object: 'model', created: 0, owned_by: 'triad' }],
      })
    if (req.method !== 'POST')
      throw new GatewayHttpError(404, 'not_found', `no route ${req.method} ${url.pathname}`)
    if (route === '/reward' && sessionInPath !== undefined) {
      const s = this.session(sessionInPath)
      const reward = parseEpisodeReward(await this.body(req))
      // The reward ends the episode after the calls already admitted have been recorded.
      await s.serial(async () => s.finish(reward))
      return this.json(res, 200, {
        session: s.id,
        reward: reward.reward,
        ...(Object.keys(reward.named).length ? { rewards: reward.named } : {}),
      })
    }
    if (route !== '/v1/chat/completions')
      throw new GatewayHttpError(404, 'not_found', `no route POST ${url.pathname}`)
    const header = req.headers[SESSION_HEADER]
    const id = sessionInPath ?? (Array.isArray(header) ? header[0] : header)
    if (id === undefined)
      throw new GatewayHttpError(
        400,
        'missing_session',
        `no session id: send header ${SESSION_HEADER} or call /sessions/{id}/v1/chat/completions`,
      )
    const s = this.session(id)
    const request = parseGatewayRequest(await this.body(req), this.o.sampling)
    if (this.inFlight >= (this.o.maxInFlight ?? 256))
      throw new GatewayHttpError(
        429,
        'rate_limit_exceeded',
        `${this.inFlight} calls in flight on the gateway: retry later`,
        null,
        1,
      )
    if (s.pending >= (this.o.maxSessionInFlight ?? 4))
      throw new GatewayHttpError(
        429,
        'rate_limit_exceeded',
        `${s.pending} calls in flight in episode '${id}': retry later`,
        null,
        1,
      )
    this.inFlight++
    s.pending++
    let turn: Awaited<ReturnType<typeof this.call>>
    try {
      turn = await s.serial(() => this.call(s, request))
    } finally {
      this.inFlight--
      s.pending--
    }
    this.stats.calls++
    const reply = {
      id: `chatcmpl-${randomUUID()}`,
      model: this.model,
      created: Math.floor(Date.now() / 1000),
      message: turn.message,
      engineFinish: turn.finish,
      tokens: turn.tokens,
      logprobs: turn.logprobs,
      promptTokens: turn.promptTokens,
      withLogprobs: request.logprobs,
    }
    if (!request.stream) return this.json(res, 200, completionObject(this.o.chat, reply))
    res.writeHead(200, {
      'content-type': 'text/event-stream',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
    })
    for (const chunk of completionChunks(this.o.chat, reply, request.includeUsage))
      res.write(`data: ${JSON.stringify(chunk)}\n\n`)
    res.end('data: [DONE]\n\n')
  }

  /** One turn of session `s`: prepare, generate, record. */
  private async call(s: GatewaySession, request: ReturnType<typeof parseGatewayRequest>) {
    if (s.ended)
      throw new GatewayHttpError(
        409,
        'episode_ended',
        `episode '${s.id}' has ended (${s.endedAs}): it takes no more calls`,
      )
    if (s.recorder.turns >= s.options.maxTurns)
      throw new GatewayHttpError(
        409,
        'turn_limit',
        `episode '${s.id}' has made its ${s.options.maxTurns} calls (the task's maxTurns): report its reward`,
      )
    let prepared: ReturnType<typeof s.recorder.prepare>
    try {
      prepared = s.recorder.prepare(request.messages, request.tools)
    } catch (err) {
      if (err instanceof ContextFullError)
        throw new GatewayHttpError(400, 'context_length_exceeded', err.message, 'messages')
      if (err instanceof TemplateError)
        throw new GatewayHttpError(400, 'invalid_value', err.message, 'messages')
      throw err
    }
    const maxNew = Math.min(
      request.maxTokens ?? s.options.maxNewTokens,
      s.options.maxNewTokens,
      prepared.room,
    )
    let turn: GeneratedTurn
    try {
      turn = await this.o.policy.generate(
        {
          prompt: prepared.prompt,
          max_new_tokens: maxNew,
          temperature: this.o.sampling.temperature,
          top_p: this.o.sampling.top_p,
          stop_tokens: [...this.o.chat.stopTokens],
          seed: episodeSeeds.turn(s.options.seed, s.recorder.turns),
        },
        s.halt.signal,
      )
    } catch (err) {
      if (s.ended)
        throw new GatewayHttpError(
          409,
          'episode_ended',
          `episode '${s.id}' ended during the call (${s.endedAs})`,
        )
      throw new GatewayHttpError(
        503,
        'policy_unavailable',
        `no policy engine answered: ${(err as Error).message}`,
        null,
        1,
      )
    }
    if (s.ended)
      throw new GatewayHttpError(
        409,
        'episode_ended',
        `episode '${s.id}' ended during the call (${s.endedAs})`,
      )
    const parsed = this.o.chat.parseTurn(turn.tokens)
    const t = s.recorder.turns
    const message: AssistantMessage = parsed.ok
      ? parsed.message.tool_calls?.length
        ? {
            role: 'assistant',
            content: parsed.message.content || null,
            tool_calls: parsed.message.tool_calls.map((c, i) => ({ ...c, id: `call_${t}_${i}` })),
          }
        : { role: 'assistant', content: parsed.message.content ?? '' }
      : { role: 'assistant', content: parsed.text }
    s.recorder.commit(prepared, turn, message)
    return {
      message,
      finish: turn.finish_reason,
      tokens: turn.tokens,
      logprobs: turn.logprobs,
      promptTokens: prepared.prompt.length,
    }
  }

  private get model() {
    return this.o.model ?? 'triad-policy'
  }

  private async body(req: IncomingMessage): Promise<unknown> {
    const limit = this.o.maxBodyBytes ?? 4 * 1024 * 1024
    const chunks: Buffer[] = []
    let n = 0
    for await (const c of req) {
      n += (c as Buffer).length
      if (n > limit)
        throw new GatewayHttpError(413, 'body_too_large', `the request body is over ${limit} bytes`)
      chunks.push(c as Buffer)
    }
    const text = Buffer.concat(chunks).toString('utf8')
    try {
      return JSON.parse(text)
    } catch {
      throw new GatewayHttpError(400, 'invalid_json', `the request body is not JSON: ${text.slice(0, 80)}`)
    }
  }

  private json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) {
    const text = JSON.stringify(body)
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...headers,
    })
    res.end(text)
  }

  private fail(res: ServerResponse, err: unknown) {
    const e =
      err instanceof GatewayHttpError
        ? err
        : new GatewayHttpError(
            500,
            'internal_error',
            `the gateway failed: ${(err as Error)?.message ?? String(err)}`,
          )
    this.stats.refused[e.status] = (this.stats.refused[e.status] ?? 0) + 1
    if (res.headersSent) {
      res.destroy()
      return
    }
    this.json(
      res,
      e.status,
      {
        error: {
          message: e.message,
          type: e.status >= 500 ? 'server_error' : 'invalid_request_error',
          param: e.param,
          code: e.code,
        },
      },
      e.retryAfterS !== undefined ? { 'retry-after': String(e.retryAfterS) } : {},
    )
  }
}
