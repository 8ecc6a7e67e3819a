/**
 * `triad bench rl-step`: one GRPO-TCR update (`gpu/rl-step.ts`: advantages, recomputed
 * log-probabilities, clipped loss, entropy, AdamW) against one SFT step (`gpu/sft.ts`: masked
 * cross-entropy, AdamW) on the same model and the same tokens, in the same run and backend; and the
 * extra cost of a frozen reference model for the KL term. Model and batch default to the TOOLING.md
 * reference (2 layers, width 128, 4 heads; 16 x 64 tokens).
 */
import {
  AdamW,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  RL_STEP_DEFAULTS,
  type RlBatch,
  rlStep,
  type SftBatch,
  sftStep,
} from '../../gpu/index.ts'

/** Median of a list of numbers. */
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const round = (x: number) => Number(x.toFixed(1))

export async function run(options: { quick?: boolean }) {
  const backend = await chooseBackend({ log: () => {} }) // TRIAD_BACKEND forces one
  const reps = options.quick ? 2 : 5
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
    await body() // warm-up (kernels, optimizer slots)
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
  return {
    backend: backend.name,
    config: {
      ...model,
      batch,
      seqLen,
      trainedTokens: trained,
      reps,
      statistic: 'median of reps after one warm-up; cpuMs = process user+system time (robust to other load)',
    },
    sftStep: sftMs,
    rlStep: rlMs,
    rlStepWithReference: rlKlMs,
    rlOverSftCpu: Number((rlMs.cpuMs / sftMs.cpuMs).toFixed(3)),
    referenceOverheadCpu: Number((rlKlMs.cpuMs / rlMs.cpuMs).toFixed(3)),
    rlTrainedTokensPerCpuS: Math.round((trained / rlMs.cpuMs) * 1000),
  }
}
