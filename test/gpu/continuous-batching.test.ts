import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import {
  BatcherClosedError,
  ConfigError,
  ContinuousBatcher,
  createRng,
  createTransformer,
  disposeTransformer,
  generate,
  getWeights,
  initWeights,
  ShapeError,
  type Transformer,
  type TransformerConfig,
  tokenLogprobs,
} from '../../gpu/index.ts'
import type { BatchRequestOptions } from '../../gpu/testing.ts'
import { useTestBackend } from '../support/test-backend.ts'

const config: TransformerConfig = { layers: 2, width: 16, heads: 2, contextLength: 32, vocabSize: 13 }
const prompts = [[1, 2, 3, 4, 5, 6, 7], [8, 9], [3, 1, 4, 1, 5], [12], [2, 7, 1, 8, 2, 8, 1, 8, 2, 8, 4]]

/** A model with a wider spread than the default init, so its distribution is far from uniform. */
function spreadModel(seed: number): Transformer {
  const w = initWeights(config, seed)
  const rng = createRng(seed + 1)
  for (const [name, data] of Object.entries(w))
    if (!name.endsWith('norm')) for (let i = 0; i < data.length; i++) data[i] = 0.3 * rng.normal()
  return createTransformer(config, { weights: w })
}

/** Full-forward log-probabilities of the generated part of `seq`, one unpadded sequence. */
async function referenceLogprobs(model: Transformer, seq: number[], from: number, temperature: number) {
  const inputs = tf.tensor2d([seq.slice(0, -1)], [1, seq.length - 1], 'int32')
  const targets = tf.tensor2d([seq.slice(1)], [1, seq.length - 1], 'int32')
  const lp = tokenLogprobs(model, inputs, targets, { temperature })
  const data = Array.from((await lp.data()) as Float32Array).slice(from - 1)
  tf.dispose([inputs, targets, lp])
  return data
}

/**
 * A step gate that submits `arrivals[k]` (a list of prompt indices) just before loop iteration k,
 * so requests join a batch that is already running.
 */
function staggered(
  arrivals: Record<number, number[]>,
  submit: (i: number) => void,
): { gate: () => void; iterations: () => number } {
  let k = 0
  return {
    gate: () => {
      for (const i of arrivals[k] ?? []) submit(i)
      k++
    },
    iterations: () => k,
  }
}

describe('gpu/continuous-batching', () => {
  let model: Transformer
  let other: Transformer
  before(async () => {
    await useTestBackend()
    model = spreadModel(7)
    other = spreadModel(21)
  })
  after(() => {
    disposeTransformer(model)
    disposeTransformer(other)
  })

  it('continuous-batching - greedy outputs equal generate() token for token, with staggered arrivals', async () => {
    const options: BatchRequestOptions = { maxNewTokens: 12, temperature: 0 }
    const expected = await Promise.all(prompts.map((p) => generate(model, [p], options).then((g) => g[0]!)))
    const batcher = new ContinuousBatcher(model, {
      stepGate: () => arrivalsGate.gate(),
    })
    const results: Promise<unknown>[] = new Array(prompts.length)
    const submit = (i: number) => {
      results[i] = batcher.submit(Int32Array.from(prompts[i]!), options)
    }
    const arrivalsGate = staggered({ 1: [1], 3: [2, 3], 6: [4] }, submit)
    submit(0)
    const got = (await Promise.all(
      [0, 1, 2, 3, 4].map(async (i) => {
        while (!results[i]) await new Promise((r) => setImmediate(r))
        return results[i]
      }),
    )) as Awaited<ReturnType<ContinuousBatcher['submit']>>[]
    for (let i = 0; i < prompts.length; i++) {
      assert.deepEqual(Array.from(got[i]!.tokens), Array.from(expected[i]!.tokens), `prompt ${i}`)
      assert.equal(got[i]!.finishReason, expected[i]!.finishReason)
      assert.equal(got[i]!.version, 0)
      for (let k = 0; k < got[i]!.logprobs.length; k++)
        assert.ok(Math.abs(got[i]!.logprobs[k]! - expected[i]!.logprobs[k]!) < 1e-4)
    }
    const s = batcher.stats()
    assert.equal(s.completed, 5)
    assert.equal(s.tokens, 5 * 12)
    // Shared passes: far fewer decode passes than tokens, mean batch above 1.
    assert.ok(s.decodeSteps < 30, `decode passes ${s.decodeSteps}`)
    assert.ok(s.batchRows / s.decodeSteps > 2, `mean batch ${s.batchRows / s.decodeSteps}`)
    await batcher.close()
  })

  it('continuous-batching - sampled tokens equal generate() per seed and logprobs match a full forward to 1e-4', async () => {
    const batcher = new ContinuousBatcher(model, { maxBatch: 3 })
    for (const [temperature, top_p] of [
      [0.7, 1],
      [1, 0.9],
    ] as const) {
      const gens = await Promise.all(
        prompts.map((p, i) =>
          batcher.submit(Int32Array.from(p), { maxNewTokens: 9, temperature, top_p, seed: 40 + i }),
        ),
      )
      for (let i = 0; i < prompts.length; i++) {
        const g = gens[i]!
        const [alone] = await generate(model, [prompts[i]!], {
          maxNewTokens: 9,
          temperature,
          top_p,
          seed: 40 + i,
        })
        assert.deepEqual(Array.from(g.tokens), Array.from(alone!.tokens), `prompt ${i} T=${temperature}`)
        if (top_p === 1) {
          const ref = await referenceLogprobs(
            model,
            [...prompts[i]!, ...g.tokens],
            prompts[i]!.length,
            temperature,
          )
          assert.equal(ref.length, g.logprobs.length)
          for (let k = 0; k < ref.length; k++)
            assert.ok(
              Math.abs(ref[k]! - g.logprobs[k]!) < 1e-4,
              `prompt ${i} token ${k}: ${ref[k]} vs ${g.logprobs[k]}`,
            )
        }
      }
    }
    await batcher.close()
  })

  it('continuous-batching - a prefill token budget admits requests in chunks with the same outputs', async () => {
    const batcher = new ContinuousBatcher(model, { prefillTokens: 10 })
    const gens = await Promise.all(
      prompts.map((p) => batcher.submit(Int32Array.from(p), { maxNewTokens: 6, temperature: 0 })),
    )
    for (let i = 0; i < prompts.length; i++) {
      const [alone] = await generate(model, [prompts[i]!], { maxNewTokens: 6, temperature: 0 })
      assert.deepEqual(Array.from(gens[i]!.tokens), Array.from(alone!.tokens))
    }
    // [7], [2, 5] (2 x 5 = 10), [1], [11]: the budget holds unless one prompt alone exceeds it.
    assert.equal(batcher.stats().prefills, 4)
    await batcher.close()
  })

  it('continuous-batching - stop tokens, max tokens and the context limit end requests of different lengths', async () => {
    const batcher = new ContinuousBatcher(model, { maxBatch: 2 })
    const greedy = (await generate(model, [prompts[0]!], { maxNewTokens: 6, temperature: 0 }))[0]!
    const stopAt = greedy.tokens[3]!
    const longPrompt = Array.from({ length: 28 }, (_, i) => (i * 5) % 13)
    const [stopped, short, ctx, one] = await Promise.all([
      batcher.submit(Int32Array.from(prompts[0]!), { maxNewTokens: 6, temperature: 0, stopTokens: [stopAt] }),
      batcher.submit(Int32Array.from(prompts[1]!), { maxNewTokens: 2, temperature: 0 }),
      batcher.submit(Int32Array.from(longPrompt), { maxNewTokens: 20, temperature: 0 }),
      batcher.submit(Int32Array.from(prompts[3]!), { maxNewTokens: 1 }),
    ])
    const firstStop = Array.from(greedy.tokens).indexOf(stopAt)
    assert.equal(stopped!.finishReason, 'stop')
    assert.deepEqual(Array.from(stopped!.tokens), Array.from(greedy.tokens.slice(0, firstStop + 1)))
    assert.equal(short!.tokens.length, 2)
    assert.equal(short!.finishReason, 'length')
    assert.equal(ctx!.tokens.length, 32 - 28) // context length 32
    assert.equal(ctx!.finishReason, 'length')
    const [ctxAlone] = await generate(model, [longPrompt], { maxNewTokens: 20, temperature: 0 })
    assert.deepEqual(Array.from(ctx!.tokens), Array.from(ctxAlone!.tokens))
    assert.equal(one!.tokens.length, 1)
    await batcher.close()
    // The middle row retires first: the rows kept are not contiguous.
    const mixed = new ContinuousBatcher(model)
    const lengths = [8, 2, 8]
    const outs = await Promise.all(
      lengths.map((n, i) => mixed.submit(Int32Array.from(prompts[i]!), { maxNewTokens: n, temperature: 0 })),
    )
    for (let i = 0; i < 3; i++) {
      const [alone] = await generate(model, [prompts[i]!], { maxNewTokens: lengths[i]!, temperature: 0 })
      assert.deepEqual(Array.from(outs[i]!.tokens), Array.from(alone!.tokens))
    }
    await mixed.close()
    // A short sequence outlives a long one: the shared cache shrinks back to what it needs.
    const both = new ContinuousBatcher(model)
    const [, outlives] = await Promise.all([
      both.submit(Int32Array.from(longPrompt), { maxNewTokens: 20, temperature: 0 }),
      both.submit(Int32Array.from(prompts[3]!), { maxNewTokens: 12, temperature: 0 }),
    ])
    const [outlivesAlone] = await generate(model, [prompts[3]!], { maxNewTokens: 12, temperature: 0 })
    assert.deepEqual(Array.from(outlives!.tokens), Array.from(outlivesAlone!.tokens))
    await both.close()
  })

  it('continuous-batching - a new model takes new requests while running ones finish on the old', async () => {
    const retired: number[] = []
    let step = 0
    let swap: (() => void) | undefined
    const batcher = new ContinuousBatcher(model, {
      version: 3,
      onModelRetired: (_m, v) => retired.push(v),
      stepGate: () => {
        if (++step === 4) swap?.()
      },
    })
    let late: Promise<Awaited<ReturnType<ContinuousBatcher['submit']>>> | undefined
    swap = () => {
      batcher.setModel(other, 4)
      late = batcher.submit(Int32Array.from(prompts[2]!), { maxNewTokens: 8, temperature: 0 })
    }
    const early = await batcher.submit(Int32Array.from(prompts[0]!), { maxNewTokens: 10, temperature: 0 })
    const lateGen = await late!
    assert.equal(early.version, 3)
    assert.equal(lateGen.version, 4)
    const [earlyRef] = await generate(model, [prompts[0]!], { maxNewTokens: 10, temperature: 0 })
    const [lateRef] = await generate(other, [prompts[2]!], { maxNewTokens: 8, temperature: 0 })
    assert.deepEqual(Array.from(early.tokens), Array.from(earlyRef!.tokens))
    assert.deepEqual(Array.from(lateGen.tokens), Array.from(lateRef!.tokens))
    assert.deepEqual(retired, [3])
    assert.equal(batcher.version, 4)
    await batcher.close()
  })

  it('continuous-batching - bad requests are rejected with typed errors', async () => {
    const batcher = new ContinuousBatcher(model)
    await assert.rejects(batcher.submit(Int32Array.of(), { maxNewTokens: 3 }), ShapeError)
    await assert.rejects(batcher.submit(Int32Array.of(1, 13), { maxNewTokens: 3 }), ShapeError)
    await assert.rejects(batcher.submit(new Int32Array(32), { maxNewTokens: 3 }), ShapeError)
    await assert.rejects(batcher.submit(Int32Array.of(1), { maxNewTokens: 0 }), ConfigError)
    await assert.rejects(batcher.submit(Int32Array.of(1), { maxNewTokens: 2, temperature: -1 }), ConfigError)
    await assert.rejects(batcher.submit(Int32Array.of(1), { maxNewTokens: 2, top_p: 0 }), ConfigError)
    assert.throws(() => new ContinuousBatcher(model, { maxBatch: 0 }), ConfigError)
    assert.throws(() => new ContinuousBatcher(model, { prefillTokens: 0 }), ConfigError)
    await batcher.close()
    await assert.rejects(batcher.submit(Int32Array.of(1), { maxNewTokens: 2 }), BatcherClosedError)
  })

  it('continuous-batching - close rejects waiting and running requests and frees every tensor', async () => {
    const before = tf.memory().numTensors
    let release!: () => void
    const held = new Promise<void>((r) => {
      release = r
    })
    let step = 0
    const batcher = new ContinuousBatcher(model, {
      maxBatch: 2,
      stepGate: () => (++step === 3 ? held : undefined),
    })
    const pending = prompts.map((p) =>
      batcher.submit(Int32Array.from(p), { maxNewTokens: 20, temperature: 0.5 }),
    )
    while (step < 3) await new Promise((r) => setImmediate(r))
    const closing = batcher.close()
    release()
    await closing
    for (const p of pending) await assert.rejects(p, BatcherClosedError)
    assert.equal(tf.memory().numTensors, before)
  })

  it('continuous-batching - leaves no tensors behind after serving', async () => {
    const before = tf.memory().numTensors
    const plain = new ContinuousBatcher(model, { maxBatch: 3, prefixCacheTokens: 0 })
    await Promise.all(prompts.map((p, i) => plain.submit(Int32Array.from(p), { maxNewTokens: 7, seed: i })))
    assert.equal(tf.memory().numTensors, before)
    await plain.close()
    // With the prefix cache, finished sequences' keys and values stay until close.
    const cached = new ContinuousBatcher(model, { maxBatch: 3 })
    await Promise.all(prompts.map((p, i) => cached.submit(Int32Array.from(p), { maxNewTokens: 7, seed: i })))
    assert.equal(tf.memory().numTensors, before + prompts.length * 2 * config.layers)
    cached.setModel(other, 1) // the old version's cache goes with its cohort
    assert.equal(tf.memory().numTensors, before)
    await cached.close()
    assert.equal(tf.memory().numTensors, before)
  })

  it('continuous-batching - a finished row idles masked until compaction and its prefix is still exact', async () => {
    const batcher = new ContinuousBatcher(model)
    const reqs = Array.from({ length: 8 }, (_, i) => prompts[i % prompts.length]!.map((t) => (t + i) % 13))
    const lengths = reqs.map((_, i) => (i === 0 ? 2 : 10))
    const outs = await Promise.all(
      reqs.map((p, i) => batcher.submit(Int32Array.from(p), { maxNewTokens: lengths[i]!, temperature: 0 })),
    )
    for (let i = 0; i < reqs.length; i++) {
      const [alone] = await generate(model, [reqs[i]!], { maxNewTokens: lengths[i]!, temperature: 0 })
      assert.deepEqual(Array.from(outs[i]!.tokens), Array.from(alone!.tokens))
    }
    const next = [...reqs[0]!, ...outs[0]!.tokens, 3]
    const follow = await batcher.submit(Int32Array.from(next), { maxNewTokens: 5, temperature: 0 })
    const [followAlone] = await generate(model, [next], { maxNewTokens: 5, temperature: 0 })
    assert.deepEqual(Array.from(follow.tokens), Array.from(followAlone!.tokens))
    assert.equal(batcher.stats().prefixHits, 1)
    assert.equal(batcher.stats().prefixTokensSaved, reqs[0]!.length + 1)
    await batcher.close()
  })

  it('continuous-batching - a cached prefix is not used when the gap it would leave could overrun the context', async () => {
    const batcher = new ContinuousBatcher(model)
    const first = await batcher.submit(Int32Array.from(prompts[0]!), { maxNewTokens: 3, temperature: 0 })
    const next = [...prompts[0]!, ...first.tokens, 5] // extends the cached 9 tokens by 2
    const fresh = Array.from({ length: 20 }, (_, k) => (k * 7) % 13) // widens the chunk to 20
    const [b, c] = await Promise.all([
      batcher.submit(Int32Array.from(next), { maxNewTokens: 40, temperature: 0 }),
      batcher.submit(Int32Array.from(fresh), { maxNewTokens: 4, temperature: 0 }),
    ])
    const [bAlone] = await generate(model, [next], { maxNewTokens: 40, temperature: 0 })
    const [cAlone] = await generate(model, [fresh], { maxNewTokens: 4, temperature: 0 })
    assert.deepEqual(Array.from(b!.tokens), Array.from(bAlone!.tokens))
    assert.equal(b!.tokens.length, 32 - next.length)
    assert.deepEqual(Array.from(c!.tokens), Array.from(cAlone!.tokens))
    assert.equal(batcher.stats().prefixHits, 0)
    // Alone, the same request does start from the cached prefix.
    const d = await batcher.submit(Int32Array.from(next), { maxNewTokens: 40, temperature: 0 })
    assert.deepEqual(Array.from(d.tokens), Array.from(bAlone!.tokens))
    assert.equal(batcher.stats().prefixHits, 1)
    await batcher.close()
  })

  it('continuous-batching - agent loops reuse cached prefixes with the same tokens and logprobs as a full pass', async () => {
    const long = createTransformer({ ...config, contextLength: 64 }, { weights: await getWeights(model) })
    const batcher = new ContinuousBatcher(long)
    const uncached = new ContinuousBatcher(long, { prefixCacheTokens: 0 })
    const loop = async (b: ContinuousBatcher, i: number) => {
      const rng = createRng(50 + i)
      const context = [...prompts[i]!]
      const turns: { tokens: number[]; logprobs: number[]; from: number; temperature: number }[] = []
      for (let turn = 0; turn < 3; turn++) {
        const temperature = turn === 1 ? 0.8 : 0
        const g = await b.submit(Int32Array.from(context), {
          maxNewTokens: 3 + ((i + turn) % 4),
          temperature,
          seed: i * 10 + turn,
        })
        turns.push({
          tokens: Array.from(g.tokens),
          logprobs: Array.from(g.logprobs),
          from: context.length,
          temperature,
        })
        context.push(...g.tokens)
        for (let k = 0; k < 1 + ((i * 3 + turn) % 5); k++) context.push(rng.int(13)) // a tool result
      }
      return { turns, context }
    }
    const withCache = await Promise.all(prompts.map((_, i) => loop(batcher, i)))
    const without = await Promise.all(prompts.map((_, i) => loop(uncached, i)))
    for (let i = 0; i < prompts.length; i++) {
      assert.deepEqual(withCache[i]!.context, without[i]!.context, `loop ${i}`)
      for (const t of withCache[i]!.turns) {
        const seq = [...withCache[i]!.context.slice(0, t.from), ...t.tokens]
        if (t.temperature > 0) {
          const ref = await referenceLogprobs(long, seq, t.from, t.temperature)
          for (let k = 0; k < ref.length; k++) assert.ok(Math.abs(ref[k]! - t.logprobs[k]!) < 1e-4)
        } else {
          const [alone] = await generate(long, [seq.slice(0, t.from)], {
            maxNewTokens: t.tokens.length,
            temperature: 0,
          })
          assert.deepEqual(t.tokens, Array.from(alone!.tokens))
        }
      }
    }
    const s = batcher.stats()
    assert.ok(s.prefixHits >= 2 * prompts.length - 2, `prefix hits ${s.prefixHits}`)
    assert.ok(s.prefixTokensSaved > 0)
    assert.ok(s.prefillTokens < uncached.stats().prefillTokens)
    assert.equal(uncached.stats().prefixHits, 0)
    await batcher.close()
    await uncached.close()
    disposeTransformer(long)
  })
})
