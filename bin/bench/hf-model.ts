/**
 * `triad bench hf-model`: a Hugging Face model in the Qwen2.5-0.5B shape (24 layers, width 896, 14
 * query and 2 key/value heads of 64, MLP 4864, vocabulary 151,936, tied, q/k/v biases) with random
 * weights written on the fly as a sharded BF16 directory, on the chosen backend (`--backend`, with
 * `--threads` kernel threads): load time, greedy generation tokens/s with the KV cache at batch 1
 * and 16, a LoRA training step (rank 16, alpha 32, all seven projections, 2 sequences of 512
 * tokens: forward, backward, AdamW on the adapters), peak tensor memory and the process's peak
 * resident memory, and each rate as a fraction of the backend's own 1024x1024x1024 matMul rate
 * measured in the same run. Training of the full model runs when its float32 weights, gradients
 * and AdamW moments fit the backend's memory (and `--skip-full-training` is not given) and is
 * reported as not fitting otherwise. With a
 * PyTorch at hand (`torch-twin.ts`) the same generation and LoRA step run in PyTorch on the same
 * architecture at the same thread count, and `speedupOverTorch` gives torch time / triad time
 * (above 1: triad is faster). `--quick` keeps the widths and vocabulary but uses 2 layers (and
 * LoRA on 2 x 64 tokens).
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import * as tf from '@tensorflow/tfjs'
import {
  AdamW,
  backendMemoryLimit,
  disposeTransformer,
  encodeSafetensors,
  fullConfig,
  fullLoraConfig,
  generate,
  hfTensorShapes,
  initAdapters,
  loadHfModel,
  lossAndGrads,
  modelMemoryBytes,
  parameterBytes,
  parameterCount,
  SafetensorsDtype,
  type Transformer,
  type TransformerConfig,
  toHfConfig,
  tokenLogprobs,
  trainingFlopsPerToken,
  withAdapters,
} from '../../gpu/index.ts'
import { benchBackend, speedupOverTorch, torchTwin } from './torch-twin.ts'

const round = (x: number, digits = 1) => Number(x.toFixed(digits))

/** Fills with uniform values of standard deviation `std` (xorshift32; fast, for benchmark weights). */
function fillRandom(data: Float32Array, seed: number, std: number): void {
  let s = seed >>> 0 || 1
  const scale = std * Math.sqrt(12) // uniform on [-a/2, a/2] has std a / sqrt(12)
  for (let i = 0; i < data.length; i++) {
    s ^= s << 13
    s ^= s >>> 17
    s ^= s << 5
    data[i] = ((s >>> 0) / 4294967296 - 0.5) * scale
  }
}

/** Median of a list of numbers. */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

/**
 * Training steps on `rows` sequences of `tokens` tokens (mean next-token cross-entropy over every
 * position, AdamW at lr 1e-5): one warm-up step, then `steps` timed ones.
 * @returns the median step in wall and CPU (this process, all threads) ms, and tokens/s of the
 *   median wall step.
 */
async function trainingRate(
  model: Transformer,
  rows: number,
  tokens: number,
  steps: number,
): Promise<{ ms: number; cpuMs: number; tokensPerSecond: number }> {
  const ids = Array.from({ length: rows }, (_, r) =>
    Array.from({ length: tokens + 1 }, (_, i) => (r * 31 + i * 7919) % 151643),
  )
  const input = tf.tensor2d(
    ids.map((row) => row.slice(0, -1)),
    undefined,
    'int32',
  )
  const target = tf.tensor2d(
    ids.map((row) => row.slice(1)),
    undefined,
    'int32',
  )
  const optimizer = new AdamW(model.params)
  try {
    const wall: number[] = []
    const cpu: number[] = []
    for (let i = 0; i <= steps; i++) {
      const c0 = process.cpuUsage()
      const s = performance.now()
      const { grads } = await lossAndGrads(
        model,
        () => tf.neg(tf.mean(tokenLogprobs(model, input, target))) as tf.Scalar,
      )
      await optimizer.step(grads, 1e-5)
      tf.dispose(grads)
      const c = process.cpuUsage(c0)
      if (i > 0) {
        wall.push(performance.now() - s)
        cpu.push((c.user + c.system) / 1000)
      }
    }
    const ms = median(wall)
    return {
      ms: round(ms),
      cpuMs: round(median(cpu)),
      tokensPerSecond: round((rows * tokens * 1000) / ms, 2),
    }
  } finally {
    optimizer.dispose()
    tf.dispose([input, target])
  }
}

async function writeModel(dir: string, config: TransformerConfig): Promise<number> {
  const full = fullConfig(config)
  const shapes = hfTensorShapes(full)
  const groups: [string, number[]][][] = [[]]
  for (const entry of shapes) {
    const layer = /^model\.layers\.(\d+)\./.exec(entry[0])
    if (
      layer &&
      Number(layer[1]) % 6 === 0 &&
      entry[0].endsWith('input_layernorm.weight') &&
      groups.at(-1)!.length
    )
      groups.push([])
    groups.at(-1)!.push(entry)
  }
  const weightMap: Record<string, string> = {}
  let bytes = 0
  let seed = 1
  for (let g = 0; g < groups.length; g++) {
    const file = `model-${String(g + 1).padStart(5, '0')}-of-${String(groups.length).padStart(5, '0')}.safetensors`
    const tensors: Record<string, { shape: number[]; data: Float32Array }> = {}
    for (const [name, shape] of groups[g]!) {
      const data = new Float32Array(shape.reduce((a, b) => a * b, 1))
      if (name.endsWith('norm.weight')) data.fill(1)
      else fillRandom(data, seed++, 0.02)
      tensors[name] = { shape, data }
      weightMap[name] = file
    }
    const encoded = encodeSafetensors(tensors, { format: 'pt' }, { dtype: SafetensorsDtype.BF16 })
    bytes += encoded.length
    await writeFile(path.join(dir, file), encoded)
  }
  await writeFile(
    path.join(dir, 'model.safetensors.index.json'),
    JSON.stringify({ metadata: { total_size: bytes }, weight_map: weightMap }),
  )
  await writeFile(
    path.join(dir, 'config.json'),
    JSON.stringify(toHfConfig(full, { eosTokenIds: [151645] }, { torchDtype: 'bfloat16' })),
  )
  return bytes
}

/**
 * Runs the benchmark (see the file's comment): times in ms, rates in tokens/s, memory in bytes.
 * @param options.backend forces a backend (else `TRIAD_BACKEND`, else the best); `threads` the
 *   kernels' threads (default every core); `torch` the Python with torch (default: found).
 */
export async function run(options: {
  quick?: boolean
  backend?: string
  threads?: number
  torch?: string
  /** Skip the full-parameter training step (on the native backend it holds about 4x its `bytesNeeded` resident). */
  skipFullTraining?: boolean
}) {
  const quick = options.quick === true
  const { choice: backend, threads } = await benchBackend(options)
  const config: TransformerConfig = {
    layers: quick ? 2 : 24,
    width: 896,
    heads: 14,
    kvHeads: 2,
    headDim: 64,
    mlpHidden: 4864,
    vocabSize: 151936,
    contextLength: 512,
    ropeTheta: 1000000,
    normEps: 1e-6,
    qkvBias: true,
    tiedEmbeddings: true,
  }
  const dir = await mkdtemp(path.join(tmpdir(), 'triad-bench-hf-'))
  try {
    const t0 = performance.now()
    const fileBytes = await writeModel(dir, config)
    const writeMs = performance.now() - t0

    // the backend's matMul rate, 1024^3 (2 n^3 FLOPs), best of 3 after a warm-up
    const a = tf.randomNormal([1024, 1024], 0, 1, 'float32', 1)
    const b = tf.randomNormal([1024, 1024], 0, 1, 'float32', 2)
    let bestMs = Number.POSITIVE_INFINITY
    for (let i = 0; i < 4; i++) {
      const s = performance.now()
      const c = tf.matMul(a, b)
      await c.data()
      c.dispose()
      if (i > 0) bestMs = Math.min(bestMs, performance.now() - s)
    }
    tf.dispose([a, b])
    const matmulGflops = (2 * 1024 ** 3) / bestMs / 1e6

    const progress = (line: string) =>
      process.stderr.write(`hf-model: ${line} (${tf.memory().numBytes} tensor bytes)\n`)
    progress(`wrote ${fileBytes} bytes in ${round(writeMs)} ms`)
    const l0 = performance.now()
    const { model } = await loadHfModel(dir)
    const loadMs = performance.now() - l0
    let peak = tf.memory().numBytes
    progress(`loaded in ${round(loadMs)} ms`)

    const n = parameterCount(config)
    const gen = async (batch: number, newTokens: number) => {
      const prompts = Array.from({ length: batch }, (_, r) =>
        Array.from({ length: 16 }, (_, i) => (r * 31 + i * 7) % 151936),
      )
      await generate(model, prompts.slice(0, 1), { maxNewTokens: 2, temperature: 0 }) // warm-up
      const c0 = process.cpuUsage()
      const s = performance.now()
      const out = await generate(model, prompts, { maxNewTokens: newTokens, temperature: 0 }) // greedy
      const ms = performance.now() - s
      const c = process.cpuUsage(c0)
      peak = Math.max(peak, tf.memory().numBytes)
      const tokens = out.reduce((acc, g) => acc + g.tokens.length, 0)
      const tokensPerSecond = (tokens / ms) * 1000
      // about 2 N FLOPs per generated token (the prompt pass included in the time, not in the count)
      return {
        batch,
        promptTokens: 16,
        newTokens,
        temperature: 0,
        ms: round(ms),
        cpuMs: round((c.user + c.system) / 1000),
        msPerStep: round(ms / newTokens, 2),
        tokensPerSecond: round(tokensPerSecond, 2),
        fractionOfMatmulPeak: round((2 * n * tokensPerSecond) / 1e9 / matmulGflops, 3),
      }
    }
    // a batch that fails (the wasm heap is 4 GiB) is reported with its error, not lost
    const attempt = async (batch: number, newTokens: number) => {
      try {
        const r = await gen(batch, newTokens)
        progress(`generated at batch ${batch}`)
        return r
      } catch (err) {
        progress(`batch ${batch} failed: ${(err as Error).message}`)
        return { batch, newTokens, failed: (err as Error).message }
      }
    }
    // Batch 1, then LoRA training, then batch 16 and full training: an allocation beyond the wasm
    // heap aborts the module for the rest of the process, and those three are where it can happen
    // (on wasm, batch 16 transposes the 544 MB output head beside 2 GB of float32 weights; LoRA on
    // 2 x 512 tokens does not fit either).
    const genSizes = [
      { batch: 1, newTokens: quick ? 4 : 16 },
      { batch: 16, newTokens: quick ? 2 : 8 },
    ]
    const generation: Awaited<ReturnType<typeof attempt>>[] = [await attempt(1, genSizes[0]!.newTokens)]

    // training: LoRA on the shared frozen base, then the full model when it fits
    const limit = backendMemoryLimit()
    const fullTrainingBytes = 4 * parameterBytes(config) // weights, gradients, two AdamW moments
    const trainTokens = quick ? 64 : 128 // full training: one sequence
    const loraRows = 2
    const loraTokens = quick ? 64 : 512 // LoRA: 2 sequences
    const trainSteps = quick ? 1 : 2
    const full = fullConfig(config)
    const attentionTerm = (t: number) => full.layers * full.heads * full.headDim * t // L H Q T
    const lora = fullLoraConfig({ rank: 16, alpha: 32 })
    const loraFlops = 4 * n + 8 * attentionTerm(loraTokens) // forward 2N, input gradients 2N; no frozen weight gradients
    const fullFlops = trainingFlopsPerToken(config, trainTokens) // 6N + 12 L H Q T
    const measure = async (
      what: string,
      m: () => Transformer,
      rows: number,
      tokens: number,
      flopsPerToken: number,
    ) => {
      const trained = m()
      try {
        const r = await trainingRate(trained, rows, tokens, trainSteps)
        peak = Math.max(peak, tf.memory().numBytes)
        progress(`${what} training: ${r.tokensPerSecond} tokens/s`)
        return {
          trainedParameters: [...trained.params.values()].reduce((acc, v) => acc + v.size, 0),
          rows,
          seqLen: tokens,
          tokensPerStep: rows * tokens,
          steps: trainSteps,
          msPerStep: r.ms,
          cpuMsPerStep: r.cpuMs,
          tokensPerSecond: r.tokensPerSecond,
          fractionOfMatmulPeak: round((flopsPerToken * r.tokensPerSecond) / 1e9 / matmulGflops, 3),
          rssBytesAfter: process.memoryUsage().rss,
          maxRssBytesSoFar: process.resourceUsage().maxRSS * 1024,
        }
      } catch (err) {
        progress(`${what} training failed: ${(err as Error).message}`)
        return { failed: (err as Error).message }
      } finally {
        if (trained !== model) disposeTransformer(trained)
      }
    }
    const loraTraining = {
      rank: lora.rank,
      targets: lora.targets,
      alpha: lora.alpha,
      ...(await measure(
        'LoRA',
        () => withAdapters(model, initAdapters(full, lora, 1), lora),
        loraRows,
        loraTokens,
        loraFlops,
      )),
    }
    generation.push(await attempt(16, genSizes[1]!.newTokens))
    const fullTraining = options.skipFullTraining
      ? { skipped: '--skip-full-training' }
      : fullTrainingBytes + modelMemoryBytes(full) <= limit.bytes
        ? await measure('full', () => model, 1, trainTokens, fullFlops)
        : {
            skipped: `needs ${fullTrainingBytes} bytes for weights, gradients and moments; the ${limit.backend} backend holds ${limit.bytes}`,
          }
    disposeTransformer(model)
    const maxRssBytes = process.resourceUsage().maxRSS * 1024

    // The PyTorch twin: the same architecture, generation sizes and LoRA step, at the same threads.
    const twin = await torchTwin(options.torch, full, threads.backend, [
      ...genSizes.map((g) => ({
        kind: 'generate' as const,
        reps: quick ? 1 : 2,
        batch: g.batch,
        promptTokens: 16,
        newTokens: g.newTokens,
        temperature: 0,
      })),
      {
        kind: 'lora',
        reps: trainSteps,
        warmup: 1,
        rank: lora.rank,
        alpha: lora.alpha,
        targets: lora.targets,
        rows: loraRows,
        seqLen: loraTokens,
        lr: 1e-5,
      },
    ])
    const torchResults = 'results' in twin ? twin.results : []
    const ours = (g: (typeof generation)[number] | undefined) => (g && 'ms' in g ? g.ms : undefined)
    const torchSummary =
      'results' in twin
        ? {
            python: twin.python,
            version: twin.torch,
            threads: twin.threads,
            statistic: 'median of reps after warm-up (generation: one warm-up run; LoRA: one warm-up step)',
            generation: torchResults.slice(0, 2).map((r) => ({
              batch: r.batch,
              newTokens: r.newTokens,
              ms: r.wallMs,
              cpuMs: r.cpuMs,
              msPerStep: r.msPerStep,
              tokensPerSecond: r.tokensPerSecond,
            })),
            lora: {
              msPerStep: torchResults[2]!.wallMs,
              cpuMsPerStep: torchResults[2]!.cpuMs,
              tokensPerSecond: torchResults[2]!.tokensPerSecond,
              trainedParameters: torchResults[2]!.trainedParameters,
            },
            maxRssBytes: twin.peakRssBytes,
          }
        : null
    return {
      bench: 'hf-model',
      backend: backend.name,
      threads,
      quick,
      shape: quick ? 'Qwen2.5-0.5B widths, 2 layers' : 'Qwen2.5-0.5B',
      config: { ...fullConfig(config), parameters: n },
      files: { dtype: 'BF16', bytes: fileBytes, writeMs: round(writeMs) },
      matmul: { shape: [1024, 1024, 1024], gflops: round(matmulGflops), bestMs: round(bestMs) },
      load: { ms: round(loadMs), bytesPerSecond: round((fileBytes / loadMs) * 1000, 0) },
      generation,
      peakTensorBytes: peak,
      maxRssBytes,
      torch: torchSummary,
      ...('reason' in twin ? { torchReason: twin.reason } : {}),
      speedupOverTorch: {
        meaning: 'torch time / triad time, wall clock (above 1: triad is faster)',
        generationBatch1: speedupOverTorch(torchResults[0]?.wallMs, ours(generation[0])),
        generationBatch16: speedupOverTorch(torchResults[1]?.wallMs, ours(generation[1])),
        loraStep: speedupOverTorch(
          torchResults[2]?.wallMs,
          'msPerStep' in loraTraining ? loraTraining.msPerStep : undefined,
        ),
      },
      training: {
        lora: loraTraining,
        full: {
          bytesNeeded: fullTrainingBytes,
          limitBytes: limit.bytes,
          note: 'float32 weights + gradients + AdamW m and v; activations not counted',
          ...fullTraining,
        },
      },
    }
  } finally {
    await rm(dir, { recursive: true, force: true })
  }
}
