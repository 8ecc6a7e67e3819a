/**
 * `triad bench model`: the policy model on the chosen backend (`TRIAD_BACKEND` forces one), for the
 * named bench configuration (4 layers, width 256, 8 heads, context 512, the chat vocabulary):
 * the backend's own 1024x1024x1024 matMul rate, training tokens/s (forward, backward, AdamW) and its
 * model-FLOPs utilisation against that matMul rate, generation tokens/s (batch 32, 128 new tokens)
 * with and without the KV cache, and peak memory. Every rate is given twice: per wall-clock second
 * and per second of this process's CPU time (the build machine is shared, so wall time includes
 * waiting for a core); ratios use the same clock on both sides. Also a GRPO-TCR step (`rlStep`) on
 * the same batch, and, with a PyTorch at hand (`torch-twin.ts`), the same model's SFT step,
 * GRPO-TCR step and cached generation in PyTorch at the same thread count, with `speedupOverTorch`
 * = torch time / triad time on each clock (above 1: triad is faster).
 */
import * as tf from '@tensorflow/tfjs'
import {
  AdamW,
  computeBatchAdvantages,
  createRng,
  createTransformer,
  disposeTransformer,
  fullConfig,
  generate,
  lossAndGrads,
  parameterCount,
  RL_STEP_DEFAULTS,
  type RlBatch,
  rlStep,
  type SftBatch,
  sftLoss,
  Tokenizer,
  type TransformerConfig,
  trainingFlopsPerToken,
} from '../../gpu/index.ts'
import { benchBackend, speedupOverTorch, torchTwin } from './torch-twin.ts'

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

/** Median wall and CPU ms of a list of timings (each clock on its own). */
function median(timings: Timing[]): Timing {
  const mid = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  return { wallMs: round(mid(timings.map((t) => t.wallMs))), cpuMs: round(mid(timings.map((t) => t.cpuMs))) }
}

/** `count` units over a timing, per wall second and per CPU second. */
function rate(count: number, t: Timing) {
  return { wall: round((count / t.wallMs) * 1000), cpu: round((count / t.cpuMs) * 1000) }
}

let peakTensorBytes = 0
const notePeak = () => {
  peakTensorBytes = Math.max(peakTensorBytes, tf.memory().numBytes)
}

/**
 * Runs the benchmark (see the file's comment): matMul GFLOP/s, training step ms and tokens/s, GRPO-TCR
 * step ms, generation tokens/s, memory in bytes, and the PyTorch twin's figures with their ratios.
 * @param options.backend forces a backend (else `TRIAD_BACKEND`, else the best); `threads` the
 *   kernels' threads (default every core); `torch` the Python with torch (default: found).
 */
export async function run(options: { quick?: boolean; backend?: string; threads?: number; torch?: string }) {
  const quick = options.quick === true
  const { choice: backend, threads } = await benchBackend(options)
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
        warmup: 1,
        genBatch: 4,
        promptLen: 16,
        newTokens: 16,
      }
    : {
        matmulReps: 5,
        trainBatch: 2,
        trainSeqLen: 512,
        trainSteps: 5,
        warmup: 3,
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
  // Warm-up steps, as many on the PyTorch twin's side: the wasm heap grows during the first ones,
  // the native engine fills its pool of arrays, and V8 compiles the hot JavaScript.
  for (let i = 0; i < sizes.warmup; i++) await trainStep()
  const profile = await tf.profile(async () => {
    const { grads } = await lossAndGrads(model, () => sftLoss(model, batch))
    tf.dispose(grads)
  })
  const train: Timing[] = []
  for (let i = 0; i < sizes.trainSteps; i++) train.push(await timed(trainStep))
  const trainTime = sum(train)
  const trainMedian = median(train)
  const trainTokensPerSecond = rate(n * sizes.trainSteps, trainTime)
  const flopsPerToken = trainingFlopsPerToken(config, sizes.trainSeqLen)
  const mfu = {
    wall: round((flopsPerToken * trainTokensPerSecond.wall) / 1e9 / matmulGflops.wall, 3),
    cpu: round((flopsPerToken * trainTokensPerSecond.cpu) / 1e9 / matmulGflops.cpu, 3),
  }
  optimizer.dispose()

  // 2b. A GRPO-TCR step (gpu/rl-step.ts) on the same rows, one token longer: every predicted token
  // trained, behavior log-probabilities -5.5, one group with rewards 0, 1, 0, 1, ...
  const rlLen = sizes.trainSeqLen + 1
  const rlTokens = Int32Array.from({ length: sizes.trainBatch * rlLen }, (_, k) => {
    const row = Math.floor(k / rlLen)
    const t = k % rlLen // the row's inputs, then its last target
    return t < sizes.trainSeqLen
      ? batch.inputs[row * sizes.trainSeqLen + t]!
      : batch.targets[(row + 1) * sizes.trainSeqLen - 1]!
  })
  const rlMask = Float32Array.from(rlTokens, (_, k) => (k % rlLen === 0 ? 0 : 1))
  const rl: RlBatch = {
    batch: sizes.trainBatch,
    seqLen: rlLen,
    tokens: rlTokens,
    lossMask: rlMask,
    behaviorLogprobs: Float32Array.from(rlMask, (m) => (m ? -5.5 : 0)),
    weightVersions: new Int32Array(rlTokens.length),
    tasks: Array.from({ length: sizes.trainBatch }, () => 'bench'),
    groupIds: Array.from({ length: sizes.trainBatch }, () => 'g0'),
    rewards: Float32Array.from({ length: sizes.trainBatch }, (_, i) => i % 2),
  }
  const rlOptimizer = new AdamW(model.params)
  const rlOnce = async () => {
    await rlStep({ model, optimizer: rlOptimizer, lr: 1e-4, version: 0 }, rl)
    notePeak()
  }
  for (let i = 0; i < sizes.warmup; i++) await rlOnce() // warm-up (the optimizer's slots, the JIT)
  const rlTimes: Timing[] = []
  for (let i = 0; i < sizes.trainSteps; i++) rlTimes.push(await timed(rlOnce))
  rlOptimizer.dispose()
  const rlMedian = median(rlTimes)

  // 3. Generation: genBatch prompts of promptLen tokens, newTokens each (no stop token), T = 1.
  const prompts = Array.from({ length: sizes.genBatch }, () =>
    Array.from({ length: sizes.promptLen }, () => rng.int(256)),
  )
  const genOptions = { maxNewTokens: sizes.newTokens, temperature: 1, seed: 7 }
  // the statistic of the PyTorch twin's: one whole generation to warm up, then the median of reps
  const genReps = quick ? 1 : 3
  await generate(model, prompts, genOptions)
  let cachedTokens = 0
  const cachedTimes: Timing[] = []
  for (let r = 0; r < genReps; r++)
    cachedTimes.push(
      await timed(async () => {
        const out = await generate(model, prompts, genOptions)
        cachedTokens = out.reduce((s, g) => s + g.tokens.length, 0)
        notePeak()
      }),
    )
  const cached = median(cachedTimes)
  let plainTokens = 0
  const plain = await timed(async () => {
    const out = await generate(model, prompts, { ...genOptions, useCache: false })
    plainTokens = out.reduce((s, g) => s + g.tokens.length, 0)
  })
  const withCache = rate(cachedTokens, cached)
  const withoutCache = rate(plainTokens, plain)
  disposeTransformer(model)
  const maxRssBytes = process.resourceUsage().maxRSS * 1024

  // 4. The PyTorch twin of the same model: SFT step, GRPO-TCR step, cached generation.
  const adv = computeBatchAdvantages(rl, RL_STEP_DEFAULTS).advantages
  const advantages = Array.from(adv.dataSync())
  tf.dispose(adv)
  const reps = sizes.trainSteps
  const twin = await torchTwin(options.torch, fullConfig(config), threads.backend, [
    {
      kind: 'sft',
      reps,
      warmup: sizes.warmup,
      rows: sizes.trainBatch,
      seqLen: sizes.trainSeqLen,
      inputs: [...batch.inputs],
      targets: [...batch.targets],
      mask: [...batch.mask],
      lossTokens: batch.lossTokens,
      lr: 1e-4,
    },
    {
      kind: 'grpo',
      reps,
      warmup: sizes.warmup,
      rows: rl.batch,
      seqLen: rl.seqLen,
      tokens: [...rl.tokens],
      lossMask: [...rl.lossMask],
      behaviorLogprobs: [...rl.behaviorLogprobs],
      advantages,
      lr: 1e-4,
    },
    {
      kind: 'generate',
      reps: quick ? 1 : 2,
      batch: sizes.genBatch,
      promptTokens: sizes.promptLen,
      newTokens: sizes.newTokens,
      temperature: 1,
    },
  ])
  const [torchSft, torchRl, torchGen] = 'results' in twin ? twin.results : []
  const ratio = (t: Timing | undefined, ours: Timing) => ({
    wall: speedupOverTorch(t?.wallMs, ours.wallMs),
    cpu: speedupOverTorch(t?.cpuMs, ours.cpuMs),
  })

  return {
    bench: 'model',
    backend: backend.name,
    threads,
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
      warmup: sizes.warmup,
      stepMs: {
        wall: round(trainTime.wallMs / sizes.trainSteps),
        cpu: round(trainTime.cpuMs / sizes.trainSteps),
      },
      stepMsMedian: { wall: trainMedian.wallMs, cpu: trainMedian.cpuMs },
      tokensPerSecond: trainTokensPerSecond,
      flopsPerToken,
      flopsFormula: '6 * parameters + 12 * layers * width * seqLen (PaLM appendix B)',
      modelGflops: {
        wall: round((flopsPerToken * trainTokensPerSecond.wall) / 1e9),
        cpu: round((flopsPerToken * trainTokensPerSecond.cpu) / 1e9),
      },
      mfuVsMatmul: mfu,
    },
    rlStep: {
      algorithm: 'GRPO-TCR (gpu/rl-step.ts defaults), AdamW',
      batch: rl.batch,
      seqLen: rl.seqLen,
      trainedTokens: rlMask.reduce((a, m) => a + m, 0),
      steps: sizes.trainSteps,
      warmup: sizes.warmup,
      stepMsMedian: { wall: rlMedian.wallMs, cpu: rlMedian.cpuMs },
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
      maxRssBytes,
    },
    torch:
      'results' in twin
        ? {
            python: twin.python,
            version: twin.torch,
            threads: twin.threads,
            statistic: 'median of reps after warm-up; cpuMs = the twin process user+system time',
            sftStepMs: { wall: torchSft!.wallMs, cpu: torchSft!.cpuMs },
            rlStepMs: { wall: torchRl!.wallMs, cpu: torchRl!.cpuMs },
            // as triad's side: its warm-up steps, then the median of as many timed ones
            stepWarmup: { sft: torchSft!.warmup, rl: torchRl!.warmup },
            stepReps: { sft: torchSft!.reps, rl: torchRl!.reps },
            generationWithCache: {
              ms: { wall: torchGen!.wallMs, cpu: torchGen!.cpuMs },
              tokensPerSecond: torchGen!.tokensPerSecond,
            },
            maxRssBytes: twin.peakRssBytes,
          }
        : null,
    ...('reason' in twin ? { torchReason: twin.reason } : {}),
    speedupOverTorch: {
      meaning: 'torch time / triad time, same clock (above 1: triad is faster)',
      sftStep: ratio(torchSft, trainMedian),
      rlStep: ratio(torchRl, rlMedian),
      generationWithCache: ratio(torchGen, cached),
    },
  }
}
