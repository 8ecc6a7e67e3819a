/**
 * `triad bench rl-step`: one GRPO-TCR update (`gpu/rl-step.ts`: advantages, recomputed
 * log-probabilities, clipped loss, entropy, AdamW) against one SFT step (`gpu/sft.ts`: masked
 * cross-entropy, AdamW) on the same model and the same tokens, in the same run and backend; and the
 * extra cost of a frozen reference model for the KL term. Model and batch default to the TOOLING.md
 * reference (2 layers, width 128, 4 heads; 16 x 64 tokens, vocabulary 264). With a PyTorch at hand
 * (`torch-twin.ts`) the same SFT and GRPO-TCR steps run in PyTorch on the same model size, tokens,
 * advantages and optimizer, at the same thread count, and `speedupOverTorch` gives torch time /
 * triad time on each clock (above 1: triad is faster).
 */
import * as tf from '@tensorflow/tfjs'
import {
  AdamW,
  computeBatchAdvantages,
  createTransformer,
  disposeTransformer,
  fullConfig,
  RL_STEP_DEFAULTS,
  type RlBatch,
  rlStep,
  type SftBatch,
  sftStep,
} from '../../gpu/index.ts'
import { benchBackend, speedupOverTorch, type TwinResult, torchTwin } from './torch-twin.ts'

/** Median of a list of numbers. */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const round = (x: number) => Number(x.toFixed(1))

/**
 * Runs the benchmark: median wall and CPU ms of an SFT step, a GRPO-TCR step and one with a
 * reference model, and the PyTorch twin's SFT and GRPO-TCR steps with their ratios.
 * @param options.backend forces a backend (else `TRIAD_BACKEND`, else the best); `threads` the
 *   kernels' threads (default every core); `torch` the Python with torch (default: found).
 */
export async function run(options: { quick?: boolean; backend?: string; threads?: number; torch?: string }) {
  const { choice: backend, threads } = await benchBackend(options)
  // Steady state, on both sides alike: a training run takes thousands of steps. Triad's first ones
  // pay its pool of arrays and V8's optimizing compiler, which compiles about 350 functions over the
  // first 15 steps or so on a thread of its own that competes with the kernels' two (measured at
  // 40 to 55 ms a GRPO-TCR step early, 26 to 30 ms from step 20, and 30 to 32 ms from step 2 with
  // --no-opt); 20 warm-up steps are past it.
  const reps = options.quick ? 2 : 9
  const warmup = options.quick ? 1 : 20
  const batch = 16
  const seqLen = options.quick ? 32 : 64
  const model = { layers: 2, width: 128, heads: 4, contextLength: seqLen, vocabSize: 264 }
  // Deterministic tokens: a prompt of 8, then a response; groups of 4, rewards 0/1 alternating.
  const tokens = Int32Array.from({ length: batch * seqLen }, (_, k) => (k * 7919 + 13) % model.vocabSize)
  const lossMask = Float32Array.from({ length: batch * seqLen }, (_, k) => (k % seqLen >= 8 ? 1 : 0))
  const rl: RlBatch = {
    batch,
    seqLen,
    tokens,
    lossMask,
    behaviorLogprobs: Float32Array.from(lossMask, (m) => (m ? -5.5 : 0)),
    weightVersions: new Int32Array(batch * seqLen),
    tasks: Array.from({ length: batch }, () => 'bench'),
    groupIds: Array.from({ length: batch }, (_, i) => `g${Math.floor(i / 4)}`),
    rewards: Float32Array.from({ length: batch }, (_, i) => i % 2),
  }
  // SFT on the same tokens: inputs ids[:-1], targets ids[1:], one position shorter (as the RL step).
  const sftLen = seqLen - 1
  const inputs = new Int32Array(batch * sftLen)
  const targets = new Int32Array(batch * sftLen)
  const mask = new Float32Array(batch * sftLen)
  for (let i = 0; i < batch; i++) {
    for (let t = 0; t < sftLen; t++) {
      inputs[i * sftLen + t] = tokens[i * seqLen + t]!
      targets[i * sftLen + t] = tokens[i * seqLen + t + 1]!
      mask[i * sftLen + t] = lossMask[i * seqLen + t + 1]!
    }
  }
  const sft: SftBatch = {
    batch,
    seqLen: sftLen,
    inputs,
    targets,
    mask,
    lossTokens: mask.reduce((s, v) => s + v, 0),
    examples: [],
  }

  const policy = createTransformer(model, { seed: 1 })
  const reference = createTransformer(model, { seed: 1 })
  const optimizer = new AdamW(policy.params)
  const time = async (body: () => Promise<unknown>) => {
    for (let w = 0; w < warmup; w++) await body() // warm-up (kernels, optimizer slots, pool)
    const wall: number[] = []
    const cpu: number[] = []
    for (let r = 0; r < reps; r++) {
      const c0 = process.cpuUsage()
      const t0 = performance.now()
      await body()
      wall.push(performance.now() - t0)
      const c = process.cpuUsage(c0)
      cpu.push((c.user + c.system) / 1000)
    }
    return { wallMs: round(median(wall)), cpuMs: round(median(cpu)) }
  }
  const sftMs = await time(() => sftStep(policy, optimizer, sft, 1e-4))
  const rlMs = await time(() => rlStep({ model: policy, optimizer, lr: 1e-4, version: 0 }, rl))
  const rlKlMs = await time(() =>
    rlStep({ model: policy, optimizer, reference, lr: 1e-4, version: 0 }, rl, {
      ...RL_STEP_DEFAULTS,
      beta: 0.01,
    }),
  )
  disposeTransformer(policy)
  disposeTransformer(reference)
  optimizer.dispose()
  const trained = lossMask.reduce((s, v) => s + v, 0)

  // The PyTorch twin: the same steps on the same tokens and advantages (triad's own computation of them).
  const adv = computeBatchAdvantages(rl, RL_STEP_DEFAULTS).advantages
  const advantages = Array.from(adv.dataSync())
  tf.dispose(adv)
  const twin = await torchTwin(options.torch, fullConfig(model), threads.backend, [
    {
      kind: 'sft',
      reps,
      warmup,
      rows: batch,
      seqLen: sftLen,
      inputs: [...inputs],
      targets: [...targets],
      mask: [...mask],
      lossTokens: sft.lossTokens,
      lr: 1e-4,
    },
    {
      kind: 'grpo',
      reps,
      warmup,
      rows: batch,
      seqLen,
      tokens: [...tokens],
      lossMask: [...lossMask],
      behaviorLogprobs: [...rl.behaviorLogprobs],
      advantages,
      lr: 1e-4,
    },
  ])
  const torchSft = 'results' in twin ? twin.results[0] : undefined
  const torchRl = 'results' in twin ? twin.results[1] : undefined
  const twinStep = (r: TwinResult) => ({ wallMs: r.wallMs, cpuMs: r.cpuMs, warmup: r.warmup, reps: r.reps })
  const ratio = (
    t: { wallMs: number; cpuMs: number } | undefined,
    ours: { wallMs: number; cpuMs: number },
  ) => ({
    wall: speedupOverTorch(t?.wallMs, ours.wallMs),
    cpu: speedupOverTorch(t?.cpuMs, ours.cpuMs),
  })
  return {
    bench: 'rl-step',
    backend: backend.name,
    threads,
    config: {
      ...model,
      batch,
      seqLen,
      trainedTokens: trained,
      reps,
      warmup,
      statistic:
        'median of reps after warmup steps, the PyTorch twin alike; cpuMs = process user+system time (robust to other load)',
    },
    sftStep: sftMs,
    rlStep: rlMs,
    rlStepWithReference: rlKlMs,
    rlOverSftCpu: Number((rlMs.cpuMs / sftMs.cpuMs).toFixed(3)),
    referenceOverheadCpu: Number((rlKlMs.cpuMs / rlMs.cpuMs).toFixed(3)),
    rlTrainedTokensPerCpuS: Math.round((trained / rlMs.cpuMs) * 1000),
    maxRssBytes: process.resourceUsage().maxRSS * 1024,
    torch:
      'results' in twin
        ? {
            python: twin.python,
            version: twin.torch,
            threads: twin.threads,
            sftStep: twinStep(torchSft!),
            rlStep: twinStep(torchRl!),
            maxRssBytes: twin.peakRssBytes,
          }
        : null,
    ...('reason' in twin ? { torchReason: twin.reason } : {}),
    speedupOverTorch: {
      meaning: 'torch time / triad time, same clock (above 1: triad is faster)',
      sftStep: ratio(torchSft, sftMs),
      rlStep: ratio(torchRl, rlMs),
    },
  }
}
