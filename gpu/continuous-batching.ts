import * as tf from '@tensorflow/tfjs'
import { BatcherClosedError, ConfigError, ShapeError } from './errors.ts'
import { RaggedKvCache } from './kv-cache.ts'
import { PrefixCache, type PrefixEntry } from './prefix-cache.ts'
import { createRng, type Rng } from './prng.ts'
import { FinishReason, type Generation, nonFiniteLogits, pick } from './sampler.ts'
import { forward, type Transformer } from './transformer.ts'

/**
 * Continuous batching (Yu et al. 2022, Orca, "iteration-level scheduling"): many callers submit
 * prompts at any time; one loop advances every running sequence by one token per batched forward
 * pass, admits waiting requests between passes (a batched prefill whose KV cache is merged into the
 * running batch's) and retires finished ones at once, so the batch never waits for its longest
 * member.
 *
 * The running batch's cache is ragged: sequences of different lengths share one tensor per layer,
 * right-aligned (left padding), with a key mask that hides the padding and per-row rotary positions
 * counted from each sequence's first real token. So each sequence sees exactly what it would see
 * alone (`generate` with one prompt): same tokens at temperature 0, same log-probabilities.
 *
 * Weight versions: `setModel` starts a new cohort. Requests admitted from then on run on the new
 * model; sequences already running finish on the model they started with (one forward pass per
 * live cohort per step), and each result reports its version. A model whose cohort has emptied is
 * handed to `onModelRetired` (to dispose it).
 */

/** Per-request sampling settings (as `SampleOptions` of `generate`, without `useCache`). */
export interface BatchRequestOptions {
  /** Most tokens to generate. */
  maxNewTokens: number
  /** Softmax temperature; 0 means greedy (argmax). Default 1. */
  temperature?: number
  /** Nucleus mass in (0, 1]. Default 1. */
  top_p?: number
  /** Token ids that end the sequence (kept as its last token). */
  stopTokens?: readonly number[]
  /** Seed of this request's own random source; default 0. */
  seed?: number
  /**
   * Called synchronously with each token as it is picked (streaming), with its log-probability (as
   * in `Generation.logprobs`) and the row of logits `[vocabSize]` float32 it was picked from (a view
   * valid only during the call). Must not throw.
   */
  onToken?: (token: number, logprob: number, logits: Float32Array) => void
}

/** One request's output: `Generation` plus the weight version that produced every token. */
export interface BatchedGeneration extends Generation {
  /** Version of the model the sequence ran on from its prefill to its last token. */
  version: number
}

/** Options of `ContinuousBatcher`. */
export interface ContinuousBatcherOptions {
  /** Most sequences decoded together (running + admitted); the rest wait. Default 64. */
  maxBatch?: number
  /**
   * Most padded prompt tokens (rows x longest prompt) in one prefill pass; default 512. Waiting
   * requests are admitted one such chunk per loop iteration, between decode steps (as chunked
   * prefill schedulers do), because one huge prefill costs more per token on CPU backends (its
   * attention scores grow with rows x length^2) and stalls every running sequence meanwhile.
   */
  prefillTokens?: number
  /**
   * Tokens of finished sequences whose keys and values are kept per weight version (see
   * `PrefixCache`), so a prompt that extends one (an agent loop's next turn) prefills only its new
   * suffix; default 16384 (about 2 KiB per token per layer at width 128); 0 disables it.
   */
  prefixCacheTokens?: number
  /** Version of the first model; default 0. */
  version?: number
  /** Called with a replaced model once no sequence runs on it any more (for example to dispose it). */
  onModelRetired?: (model: Transformer, version: number) => void
  /**
   * Awaited before every iteration of the loop (tests use it to hold the loop at a known point).
   */
  stepGate?: () => Promise<void> | void
}

/** Counters since the batcher was made. */
export interface BatcherStats {
  /** Requests submitted (valid ones). */
  submitted: number
  /** Requests completed. */
  completed: number
  /** Tokens generated (prefill picks included), over all requests. */
  tokens: number
  /** Batched decode forward passes (one per live cohort per step). */
  decodeSteps: number
  /** Sum over decode passes of the sequences in the pass (`batchRows / decodeSteps` = mean batch). */
  batchRows: number
  /** Batched prefill forward passes. */
  prefills: number
  /** Prompt tokens prefilled (padding excluded; prefix-cache hits not counted). */
  prefillTokens: number
  /** Prompts that started from a cached prefix. */
  prefixHits: number
  /** Prompt tokens those hits did not prefill. */
  prefixTokensSaved: number
  /** Wall time in prefill passes (forward and read-back), ms. */
  prefillMs: number
  /** Wall time in decode passes (forward and read-back), ms. */
  decodeMs: number
  /** Sequences running now. */
  active: number
  /** Requests waiting for a slot now. */
  waiting: number
  /** Version new requests start on. */
  version: number
}

/** A submitted request before its prefill. */
interface Waiting {
  prompt: Int32Array
  maxNewTokens: number
  temperature: number
  top_p: number
  stop: Set<number>
  rng: Rng
  onToken: BatchRequestOptions['onToken']
  resolve: (g: BatchedGeneration) => void
  reject: (err: unknown) => void
}

/** A running sequence: one row of its cohort's cache. */
interface Row {
  request: Waiting
  tokens: number[]
  logprobs: number[]
  /** Prompt plus generated tokens. */
  total: number
  /**
   * Cache columns from this row's first real token to the end of its store: `total - 1` plus the
   * padding inside it (a prefilled suffix shorter than its chunk's leaves a masked gap after the
   * cached prefix).
   */
  footprint: number
  /**
   * Finished and answered, but its cache row is kept until the next compaction (copying the cache
   * to drop one row costs more on the wasm backend than carrying a few idle rows for some steps).
   * Idle rows are fed a masked dummy token, so their cached keys stay exactly as they were.
   */
  dead: boolean
  /** Its logits were not finite (its request was rejected): its keys and values are never reused. */
  poisoned?: boolean
}

/** Rows of a cohort still generating. */
const live = (c: { rows: readonly Row[] }) => c.rows.reduce((n, r) => n + (r.dead ? 0 : 1), 0)

/** The sequences running on one model version. */
interface Cohort {
  model: Transformer
  version: number
  store: RaggedKvCache
  rows: Row[]
  /** Finished sequences' keys and values under this cohort's model. */
  prefixes: PrefixCache
  /** True while a prefill for this cohort is in flight (it must not be retired meanwhile). */
  admitting: boolean
}

/**
 * Shares forward passes among concurrent generation requests (see the file comment).
 *
 * @example
 * const batcher = new ContinuousBatcher(model, { maxBatch: 64 })
 * const [a, b] = await Promise.all([
 *   batcher.submit(Int32Array.of(1, 2, 3), { maxNewTokens: 8, temperature: 0 }),
 *   batcher.submit(Int32Array.of(4), { maxNewTokens: 20, seed: 7 }),
 * ])
 * await batcher.close()
 */
export class ContinuousBatcher {
  private readonly maxBatch: number
  private readonly prefillTokens: number
  private readonly waiting: Waiting[] = []
  private readonly cohorts: Cohort[] = []
  private current: Cohort
  private running = false
  /** Prefix-cache counters of cohorts already retired. */
  private readonly retiredPrefix = { hits: 0, saved: 0 }
  private closed = false
  private idle: Promise<void> = Promise.resolve()
  private readonly counters = {
    submitted: 0,
    completed: 0,
    tokens: 0,
    decodeSteps: 0,
    batchRows: 0,
    prefills: 0,
    prefillTokens: 0,
    prefillMs: 0,
    decodeMs: 0,
  }

  constructor(
    model: Transformer,
    private readonly options: ContinuousBatcherOptions = {},
  ) {
    const maxBatch = options.maxBatch ?? 64
    if (!Number.isInteger(maxBatch) || maxBatch < 1)
      throw new ConfigError('maxBatch', maxBatch, 'must be a positive integer')
    this.maxBatch = maxBatch
    const prefillTokens = options.prefillTokens ?? 512
    if (!Number.isInteger(prefillTokens) || prefillTokens < 1)
      throw new ConfigError('prefillTokens', prefillTokens, 'must be a positive integer')
    this.prefillTokens = prefillTokens
    this.current = this.cohortOf(model, options.version ?? 0)
  }

  private cohortOf(model: Transformer, version: number): Cohort {
    const store = new RaggedKvCache(model.config.layers, model.config.kvHeads)
    const prefixes = new PrefixCache(this.options.prefixCacheTokens ?? 16384)
    const cohort: Cohort = { model, version, store, rows: [], prefixes, admitting: false }
    this.cohorts.push(cohort)
    return cohort
  }

  /** Version that newly admitted requests run on. */
  get version(): number {
    return this.current.version
  }

  /** The model newly admitted requests run on. */
  get model(): Transformer {
    return this.current.model
  }

  /**
   * Switches to new weights: requests admitted from now on run on `model`; running sequences
   * finish on their own model. The replaced model goes to `onModelRetired` once unused.
   * @throws BatcherClosedError after `close`.
   */
  setModel(model: Transformer, version: number): void {
    if (this.closed) throw new BatcherClosedError()
    this.current = this.cohortOf(model, version)
    this.retireEmptyCohorts()
  }

  /** Counters (see `BatcherStats`). */
  stats(): BatcherStats {
    return {
      ...this.counters,
      prefixHits: this.cohorts.reduce((s, c) => s + c.prefixes.hits, this.retiredPrefix.hits),
      prefixTokensSaved: this.cohorts.reduce((s, c) => s + c.prefixes.savedTokens, this.retiredPrefix.saved),
      active: this.cohorts.reduce((s, c) => s + live(c), 0),
      waiting: this.waiting.length,
      version: this.current.version,
    }
  }

  /**
   * Queues a prompt and resolves with its generation.
   * @param prompt token ids `[promptLen]` int32, 1 <= promptLen < contextLength.
   * @throws (rejects) ConfigError on bad settings; ShapeError on an empty prompt, an id outside the
   *   vocabulary or a prompt that leaves no room in the context; BatcherClosedError after `close`;
   *   NonFiniteError when a step's logits for it hold a NaN or a +Infinity (naming the step).
   */
  submit(prompt: ArrayLike<number>, options: BatchRequestOptions): Promise<BatchedGeneration> {
    return new Promise<BatchedGeneration>((resolve, reject) => {
      if (this.closed) return reject(new BatcherClosedError())
      const { contextLength, vocabSize } = this.current.model.config
      const temperature = options.temperature ?? 1
      const top_p = options.top_p ?? 1
      if (!Number.isInteger(options.maxNewTokens) || options.maxNewTokens < 1)
        return reject(new ConfigError('maxNewTokens', options.maxNewTokens, 'must be a positive integer'))
      if (!(temperature >= 0) || !Number.isFinite(temperature))
        return reject(new ConfigError('temperature', temperature, 'must be >= 0'))
      if (!(top_p > 0 && top_p <= 1)) return reject(new ConfigError('top_p', top_p, 'must be in (0, 1]'))
      if (prompt.length === 0) return reject(new ShapeError('prompt', 'at least one token', [0]))
      if (prompt.length >= contextLength)
        return reject(
          new ShapeError('prompt', `length below contextLength ${contextLength}`, [prompt.length]),
        )
      for (let k = 0; k < prompt.length; k++)
        if (!(Number.isInteger(prompt[k]) && prompt[k]! >= 0 && prompt[k]! < vocabSize))
          return reject(new ShapeError('prompt', `ids in [0, ${vocabSize})`, [prompt.length]))
      this.counters.submitted++
      this.waiting.push({
        prompt: Int32Array.from(prompt),
        maxNewTokens: options.maxNewTokens,
        temperature,
        top_p,
        stop: new Set(options.stopTokens ?? []),
        rng: createRng(options.seed ?? 0),
        onToken: options.onToken,
        resolve,
        reject,
      })
      this.kick()
    })
  }

  /**
   * Resolves once no request waits or runs (new submits while draining are served too), or after
   * `timeoutMs`. @returns true when drained, false on the deadline.
   */
  async drain(timeoutMs: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<false>((r) => {
      timer = setTimeout(() => r(false), timeoutMs)
    })
    const idle = (async () => {
      while (this.running) await this.idle
      return true as const
    })()
    try {
      return await Promise.race([idle, deadline])
    } finally {
      clearTimeout(timer)
    }
  }

  /**
   * Stops the loop: waiting and running requests reject with BatcherClosedError; cache tensors are
   * freed. Models are not disposed (the caller owns them; retired ones went to `onModelRetired`).
   */
  async close(): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.idle
    const err = new BatcherClosedError()
    for (const w of this.waiting.splice(0)) w.reject(err)
    for (const c of this.cohorts) {
      for (const r of c.rows) if (!r.dead) r.request.reject(err)
      c.rows = []
      c.store.dispose()
      c.prefixes.dispose()
    }
  }

  private kick(): void {
    if (this.running || this.closed) return
    this.running = true
    this.idle = this.loop().finally(() => {
      this.running = false
    })
  }

  private hasWork(): boolean {
    return this.waiting.length > 0 || this.cohorts.some((c) => c.rows.length > 0)
  }

  private async loop(): Promise<void> {
    while (!this.closed && this.hasWork()) {
      await this.options.stepGate?.()
      if (this.closed) break
      const cohort = this.current
      cohort.admitting = true
      try {
        await this.admit(cohort)
      } catch (err) {
        this.fail(cohort, err)
      } finally {
        cohort.admitting = false
      }
      for (const c of [...this.cohorts]) {
        if (c.rows.length === 0 || this.closed) continue
        try {
          await this.decode(c)
        } catch (err) {
          this.fail(c, err)
        }
      }
      this.retireEmptyCohorts()
      // Let I/O callbacks (new requests, weight announcements) run between passes.
      await new Promise<void>((r) => setImmediate(r))
    }
  }

  /** Rejects every request of a cohort after an unexpected failure and clears its cache. */
  private fail(cohort: Cohort, err: unknown): void {
    for (const r of cohort.rows) if (!r.dead) r.request.reject(err)
    cohort.rows = []
    cohort.store.dispose()
  }

  private retireEmptyCohorts(): void {
    for (let i = this.cohorts.length - 1; i >= 0; i--) {
      const c = this.cohorts[i]!
      if (c === this.current || c.rows.length > 0 || c.admitting) continue
      this.cohorts.splice(i, 1)
      c.store.dispose()
      this.retiredPrefix.hits += c.prefixes.hits
      this.retiredPrefix.saved += c.prefixes.savedTokens
      c.prefixes.dispose()
      this.options.onModelRetired?.(c.model, c.version)
    }
  }

  /**
   * Prefills the next chunk of waiting requests together (left-padded, like `generate`): as many
   * as fit the free slots and the `prefillTokens` budget, at least one. A request whose prompt
   * extends a cached sequence prefills only its suffix on top of that sequence's keys and values.
   * Picks each one's first token and merges the chunk's cache into the cohort's.
   */
  private async admit(cohort: Cohort): Promise<void> {
    const running = this.cohorts.reduce((s, c) => s + live(c), 0)
    const free = this.maxBatch - running
    if (free <= 0 || this.waiting.length === 0) return
    const { contextLength } = cohort.model.config
    const prefixOf = (w: Waiting) => cohort.prefixes.lookup(w.prompt)
    const candidates: (PrefixEntry | undefined)[] = []
    const suffix = (i: number, w: Waiting) => w.prompt.length - (candidates[i]?.tokens.length ?? 0)
    candidates.push(prefixOf(this.waiting[0]!))
    let take = 1
    let widest = suffix(0, this.waiting[0]!)
    while (take < Math.min(free, this.waiting.length)) {
      const w = this.waiting[take]!
      const p = prefixOf(w)
      const next = Math.max(widest, w.prompt.length - (p?.tokens.length ?? 0))
      if ((take + 1) * next > this.prefillTokens) break
      candidates.push(p)
      widest = next
      take++
    }
    const batch = this.waiting.splice(0, take)
    const n = batch.length
    // A row that starts from a prefix carries a masked gap of (width - its suffix) columns; its
    // footprint must stay inside the context until it finishes, else it prefills in full.
    let width = 0
    for (let changed = true; changed; ) {
      width = Math.max(...batch.map((w, i) => suffix(i, w)))
      changed = false
      batch.forEach((w, i) => {
        if (!candidates[i]) return
        const finalTotal = Math.min(w.prompt.length + w.maxNewTokens, contextLength)
        if (width - suffix(i, w) > contextLength - finalTotal) {
          candidates[i] = undefined
          changed = true
        }
      })
    }
    const ids = new Int32Array(n * width)
    const pos = new Int32Array(n * width)
    const real = new Float32Array(n * width)
    batch.forEach((w, i) => {
      const cached = candidates[i]?.tokens.length ?? 0
      const len = w.prompt.length - cached
      const off = width - len
      ids.set(w.prompt.subarray(cached), i * width + off)
      for (let k = 0; k < len; k++) {
        pos[i * width + off + k] = cached + k
        real[i * width + off + k] = 1
      }
    })
    const store = RaggedKvCache.fromPrefixes(cohort.store.layers, cohort.store.heads, candidates)
    let data: Float32Array
    const t0 = performance.now()
    try {
      const logits = tf.tidy(() =>
        forward(cohort.model, tf.tensor2d(ids, [n, width], 'int32'), {
          positions: tf.tensor2d(pos, [n, width], 'int32'),
          attentionMask: tf.tensor2d(real, [n, width], 'float32'),
          cache: store,
          lastOnly: true,
        }),
      )
      data = (await logits.data()) as Float32Array
      logits.dispose()
    } catch (err) {
      store.dispose()
      for (const w of batch) w.reject(err)
      return
    }
    this.counters.prefills++
    for (const c of candidates)
      if (c) {
        cohort.prefixes.hits++
        cohort.prefixes.savedTokens += c.tokens.length
      }
    this.counters.prefillTokens += batch.reduce((s, w, i) => s + suffix(i, w), 0)
    this.counters.prefillMs += performance.now() - t0
    const rows: Row[] = batch.map((request, i) => {
      const cached = candidates[i]?.tokens.length ?? 0
      const footprint = cached > 0 ? cached + width : request.prompt.length
      return { request, tokens: [], logprobs: [], total: request.prompt.length, footprint, dead: false }
    })
    const keep = this.sample(rows, data, cohort)
    this.remember(cohort, store, rows, keep)
    if (keep.length === 0) {
      store.dispose()
      return
    }
    if (keep.length < n) store.select(keep, Math.max(...keep.map((i) => rows[i]!.footprint)))
    cohort.store.merge(store)
    for (const i of keep) cohort.rows.push(rows[i]!)
  }

  /** Puts the keys and values of the rows of `store` that finished (not in `keep`) in the prefix cache. */
  private remember(cohort: Cohort, store: RaggedKvCache, rows: Row[], keep: number[]): void {
    if (cohort.prefixes.capacity === 0 || keep.length === rows.length) return
    const going = new Set(keep)
    rows.forEach((r, i) => {
      if (going.has(i) || r.poisoned) return
      const count = r.total - 1 // the last token was never fed
      const kv = store.extractRow(i, count)
      if (!kv) return
      const tokens = new Int32Array(count)
      tokens.set(r.request.prompt) // count = prompt + all generated tokens but the last
      tokens.set(r.tokens.slice(0, count - r.request.prompt.length), r.request.prompt.length)
      cohort.prefixes.insert(tokens, kv.keys, kv.values)
    })
  }

  /**
   * One batched forward pass feeding every live row's last token; picks, answers finished rows and
   * compacts the cache once enough rows are idle.
   */
  private async decode(cohort: Cohort): Promise<void> {
    const { contextLength } = cohort.model.config
    if (live(cohort) === 0 || cohort.store.length + 1 > contextLength) {
      this.compact(cohort)
      if (cohort.rows.length === 0) return
    }
    const rows = cohort.rows
    const b = rows.length
    const ids = new Int32Array(b)
    const pos = new Int32Array(b)
    const feed = new Float32Array(b)
    rows.forEach((r, i) => {
      if (r.dead) return // token 0 at position 0, masked out of every later step
      ids[i] = r.tokens[r.tokens.length - 1]!
      pos[i] = r.total - 1 // index of the fed token in its own sequence
      feed[i] = 1
    })
    const t0 = performance.now()
    const logits = tf.tidy(() =>
      forward(cohort.model, tf.tensor2d(ids, [b, 1], 'int32'), {
        positions: tf.tensor2d(pos, [b, 1], 'int32'),
        attentionMask: tf.tensor2d(feed, [b, 1], 'float32'),
        cache: cohort.store,
        lastOnly: true,
      }),
    )
    const data = (await logits.data()) as Float32Array
    logits.dispose()
    const liveRows = rows.filter((r) => !r.dead)
    this.counters.decodeSteps++
    this.counters.decodeMs += performance.now() - t0
    this.counters.batchRows += liveRows.length
    for (const r of liveRows) r.footprint++
    const { vocabSize } = cohort.model.config
    const liveLogits = new Float32Array(liveRows.length * vocabSize)
    let j = 0
    rows.forEach((r, i) => {
      if (!r.dead) liveLogits.set(data.subarray(i * vocabSize, (i + 1) * vocabSize), vocabSize * j++)
    })
    const going = new Set(this.sample(liveRows, liveLogits, cohort).map((k) => liveRows[k]!))
    for (const r of liveRows) if (!going.has(r)) r.dead = true
    const idle = rows.length - going.size
    if (going.size === 0 || idle * 4 >= rows.length) this.compact(cohort)
  }

  /** Drops the idle rows of a cohort's cache (their keys go to the prefix cache first). */
  private compact(cohort: Cohort): void {
    const rows = cohort.rows
    const keep: number[] = []
    rows.forEach((r, i) => {
      if (!r.dead) keep.push(i)
    })
    if (keep.length === rows.length) return
    this.remember(cohort, cohort.store, rows, keep)
    cohort.rows = keep.map((i) => rows[i]!)
    if (keep.length === 0) {
      cohort.store.dispose()
      return
    }
    cohort.store.select(keep, Math.max(...cohort.rows.map((r) => r.footprint)))
  }

  /**
   * Picks the next token of every row from `logits` `[rows, vocabSize]`; resolves finished rows.
   * A row whose logits hold a NaN or a +Infinity (its sampled logprob is then NaN) has its request
   * rejected with `NonFiniteError` naming the step, and goes no further; the other rows go on.
   * @returns indices of the rows that go on.
   */
  private sample(rows: Row[], logits: Float32Array, cohort: Cohort): number[] {
    const { vocabSize, contextLength } = cohort.model.config
    const keep: number[] = []
    rows.forEach((r, i) => {
      const q = r.request
      const row = logits.subarray(i * vocabSize, (i + 1) * vocabSize)
      const [token, logprob] = pick(row, q.temperature, q.top_p, q.rng)
      if (!Number.isFinite(logprob)) {
        r.poisoned = true
        q.reject(
          nonFiniteLogits(
            r.tokens.length,
            `a request (prompt of ${q.prompt.length} tokens, model version ${cohort.version})`,
            logprob,
          ),
        )
        return
      }
      q.onToken?.(token, logprob, row)
      r.tokens.push(token)
      r.logprobs.push(logprob)
      r.total++
      this.counters.tokens++
      let finish: FinishReason | undefined
      if (q.stop.has(token)) finish = FinishReason.Stop
      else if (r.tokens.length >= q.maxNewTokens || r.total >= contextLength) finish = FinishReason.Length
      if (finish === undefined) {
        keep.push(i)
        return
      }
      this.counters.completed++
      q.resolve({
        tokens: Int32Array.from(r.tokens),
        logprobs: Float32Array.from(r.logprobs),
        finishReason: finish,
        version: cohort.version,
      })
    })
    return keep
  }
}
