/**
 * `triad bench model`: the policy model on the chosen backend (`TRIAD_BACKEND` forces one), for the
 * named bench configuration (4 layers, width 256, 8 heads, context 512, the chat vocabulary):
 * the backend's own 1024x1024x1024 matMul rate, training tokens/s (forward, backward, AdamW) and its
 * model-FLOPs utilisation against that matMul rate, generation tokens/s (batch 32, 128 new tokens)
 * with and without the KV cache, and peak memory. Every rate is given twice: per wall-clock second
 * and per second of this process's CPU time (the build machine is shared, so wall time includes
 * waiting for a core); ratios use the same clock on both sides.
 */
import * as tf from '@tensorflow/tfjs'
import {
  AdamW,
  chooseBackend,
  createRng,
  createTransformer,
  disposeTransformer,
  generate,
  lossAndGrads,
  parameterCount,
  type SftBatch,
  sftLoss,
  Tokenizer,
  type TransformerConfig,
  trainingFlopsPerToken,
} from '../../gpu/index.ts'

/** Wall and CPU milliseconds of one awaited call. */
interface Timing {
  wallMs: number
  cpuMs: number
}

async function timed(body: () => Promise<void>): Promise<Timing> {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await body()
  const c = process.cpuUsage(c0)
  return { wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 }
}

function sum(timings: Timing[]): Timing {
  return timings.reduce((a, t) => ({ wallMs: a.wallMs + t.wallMs, cpuMs: a.cpuMs + t.cpuMs }), {
    wallMs: 0,
    cpuMs: 0,
  })
}

const round = (x: number, digits = 1) => Number(x.toFixed(digits))

/** `count` units over a timing, per wall second and per CPU second. */
function rate(count: number, t: Timing) {
  return { wall: round((count / t.wallMs) * 1000), cpu: round((count / t.cpuMs) * 1000) }
}

let peakTensorBytes = 0
const notePeak = () => {
  peakTensorBytes = Math.max(peakTensorBytes, tf.memory().numBytes)
}

export async function run(options: { quick?: boolean }) {
  const quick = options.quick === true
  const backend = await chooseBackend()
  const tokenizer = new Tokenizer()
  const config: TransformerConfig = {
    layers: 4,
    width: 256,
    heads: 8,
    contextLength: 512,
    vocabSize: tokenizer.vocabSize,
  }
  const sizes = quick
    ? {
        matmulReps: 2,
        trainBatch: 1,
        trainSeqLen: 128,
        trainSteps: 1,
        genBatch: 4,
        promptLen: 16,
        newTokens: 16,
      }
    : {
        matmulReps: 5,
        trainBatch: 2,
        trainSeqLen: 512,
        trainSteps: 3,
        genBatch: 32,
        promptLen: 16,
        newTokens: 128,
      }

  // Seeding: weights, training tokens, prompts, sampling.
  const rng = createRng(1234)
  const model = createTransformer(config, { seed: 1 })

  // 1. The backend's matMul rate, 1024 x 1024 x 1024 (2 n^3 FLOPs), best of `matmulReps`.
  const a = tf.randomNormal([1024, 1024], 0, 1, 'float32', 1)
  const b = tf.randomNormal([1024, 1024], 0, 1, 'float32', 2)
  const mm: Timing[] = []
  for (let i = 0; i <= sizes.matmulReps; i++) {
    const t = await timed(async () => {
      const c = tf.matMul(a, b)
      await c.data()
      c.dispose()
    })
    if (i > 0) mm.push(t) // the first call warms up
  }
  tf.dispose([a, b])
  const best = { wallMs: Math.min(...mm.map((t) => t.wallMs)), cpuMs: Math.min(...mm.map((t) => t.cpuMs)) }
  const matmulFlops = 2 * 1024 ** 3
  const matmulGflops = {
    wall: round(matmulFlops / best.wallMs / 1e6),
    cpu: round(matmulFlops / best.cpuMs / 1e6),
  }

  // 2. Training: forward, backward, AdamW on trainBatch x trainSeqLen tokens, after warm-up steps.
  const n = sizes.trainBatch * sizes.trainSeqLen
  const ids = Int32Array.from({ length: n }, () => rng.int(tokenizer.vocabSize))
  const batch: SftBatch = {
    batch: sizes.trainBatch,
    seqLen: sizes.trainSeqLen,
    inputs: ids,
    targets: Int32Array.from({ length: n }, (_, i) => ids[(i + 1) % n]!),
    mask: new Float32Array(n).fill(1),
    lossTokens: n,
    examples: [],
  }
  const optimizer = new AdamW(model.params)
  const trainStep = async () => {
    const { grads } = await lossAndGrads(model, () => sftLoss(model, batch))
    notePeak()
    await optimizer.step(grads, 1e-4)
    tf.dispose(grads)
  }
  await trainStep() // two warm-up steps: the wasm heap grows during the first ones
  await trainStep()
  const profile = await tf.profile(async () => {
    const { grads } = await lossAndGrads(model, () => sftLoss(model, batch))
    tf.dispose(grads)
  })
  const train: Timing[] = []
  for (let i = 0; i < sizes.trainSteps; i++) train.push(await timed(trainStep))
  const trainTime = sum(train)
  const trainTokensPerSecond = rate(n * sizes.trainSteps, trainTime)
  const flopsPerToken = trainingFlopsPerToken(config, sizes.trainSeqLen)
  const mfu = {
    wall: round((flopsPerToken * trainTokensPerSecond.wall) / 1e9 / matmulGflops.wall, 3),
    cpu: round((flopsPerToken * trainTokensPerSecond.cpu) / 1e9 / matmulGflops.cpu, 3),
  }
  optimizer.dispose()

  // 3. Generation: genBatch prompts of promptLen tokens, newTokens each (no stop token), T = 1.
  const prompts = Array.from({ length: sizes.genBatch }, () =>
    Array.from({ length: sizes.promptLen }, () => rng.int(256)),
  )
  const genOptions = { maxNewTokens: sizes.newTokens, temperature: 1, seed: 7 }
  await generate(model, prompts.slice(0, 2), { ...genOptions, maxNewTokens: 2 }) // warm-up
  let cachedTokens = 0
  const cached = await timed(async () => {
    const out = await generate(model, prompts, genOptions)
    cachedTokens = out.reduce((s, g) => s + g.tokens.length, 0)
    notePeak()
  })
  let plainTokens = 0
  const plain = await timed(async () => {
    const out = await generate(model, prompts, { ...genOptions, useCache: false })
    plainTokens = out.reduce((s, g) => s + g.tokens.length, 0)
  })
  const withCache = rate(cachedTokens, cached)
  const withoutCache = rate(plainTokens, plain)
  disposeTransformer(model)

  return {
    bench: 'model',
    backend: backend.name,
    quick,
    config: { ...config, parameters: parameterCount(config) },
    clocks: 'each rate per wall-clock second and per second of this process CPU time',
    matmul: {
      shape: [1024, 1024, 1024],
      gflops: matmulGflops,
      bestMs: { wall: round(best.wallMs), cpu: round(best.cpuMs) },
    },
    training: {
      batch: sizes.trainBatch,
      seqLen: sizes.trainSeqLen,
      steps: sizes.trainSteps,
      stepMs: {
        wall: round(trainTime.wallMs / sizes.trainSteps),
        cpu: round(trainTime.cpuMs / sizes.trainSteps),
      },
      tokensPerSecond: trainTokensPerSecond,
      flopsPerToken,
      flopsFormula: '6 * parameters + 12 * layers * width * seqLen (PaLM appendix B)',
      modelGflops: {
        wall: round((flopsPerToken * trainTokensPerSecond.wall) / 1e9),
        cpu: round((flopsPerToken * trainTokensPerSecond.cpu) / 1e9),
      },
      mfuVsMatmul: mfu,
    },
    generation: {
      batch: sizes.genBatch,
      promptLen: sizes.promptLen,
      newTokens: sizes.newTokens,
      withCache: {
        tokens: cachedTokens,
        seconds: round(cached.wallMs / 1000, 2),
        tokensPerSecond: withCache,
      },
      withoutCache: {
        tokens: plainTokens,
        seconds: round(plain.wallMs / 1000, 2),
        tokensPerSecond: withoutCache,
      },
      cacheSpeedup: {
        wall: round(withCache.wall / withoutCache.wall, 2),
        cpu: round(withCache.cpu / withoutCache.cpu, 2),
      },
    },
    memory: {
      trainingStepPeakBytes: profile.peakBytes,
      peakTensorBytes,
      maxRssBytes: process.resourceUsage().maxRSS * 1024,
    },
  }
}
