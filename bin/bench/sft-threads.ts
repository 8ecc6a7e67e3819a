/**
 * `triad bench sft-threads`: SFT throughput (padded tokens per second) with one thread against
 * data-parallel steps over two threads (`SftWorkers`, `sft.threads: 2`), in the same process on
 * the same batches. Model and batch default to the quickstart's (2 layers, width 128, 4 heads,
 * context 512; batches of 2 x 512 tokens). The ratio is what matters: the machine is shared.
 */
import os from 'node:os'
import {
  AdamW,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  type SftBatch,
  SftWorkers,
  sftStep,
} from '../../gpu/index.ts'

const round = (x: number) => Number(x.toFixed(1))

/** A deterministic batch of `rows` x `seqLen` tokens, every target in the loss. */
function batchOf(rows: number, seqLen: number, vocab: number, salt: number): SftBatch {
  const n = rows * seqLen
  const inputs = Int32Array.from({ length: n }, (_, k) => (k * 7919 + salt) % vocab)
  const targets = Int32Array.from({ length: n }, (_, k) => ((k + 1) * 7919 + salt) % vocab)
  return {
    batch: rows,
    seqLen,
    inputs,
    targets,
    mask: new Float32Array(n).fill(1),
    lossTokens: n,
    examples: [],
  }
}

export async function run(options: { quick?: boolean }) {
  const backend = await chooseBackend({ log: () => {} }) // TRIAD_BACKEND forces one
  const steps = options.quick ? 2 : 8
  const seqLen = options.quick ? 64 : 512
  const rows = 2
  const model = { layers: 2, width: 128, heads: 4, contextLength: seqLen, vocabSize: 693 }
  const batches = [0, 1].map((salt) => batchOf(rows, seqLen, model.vocabSize, salt))
  const policy = createTransformer(model, { seed: 1 })
  const optimizer = new AdamW(policy.params)
  const workers = await SftWorkers.start(1, policy.config, backend.name)
  const measure = async (parallel: boolean) => {
    const step = () =>
      parallel
        ? sftStep(policy, optimizer, batches, 1e-4, undefined, workers)
        : sftStep(policy, optimizer, batches[0]!, 1e-4)
    await step() // warm-up (kernels, optimizer slots, the thread's first batch)
    let tokens = 0
    const t0 = performance.now()
    for (let i = 0; i < steps; i++) tokens += (await step()).tokens
    const s = (performance.now() - t0) / 1000
    return { tokensPerS: Math.round(tokens / s), stepMs: round((s * 1000) / steps) }
  }
  try {
    const one = await measure(false)
    const two = await measure(true)
    return {
      backend: backend.name,
      config: { ...model, rowsPerBatch: rows, steps, cores: os.availableParallelism() },
      oneThread: one,
      twoThreads: two,
      speedup: Number((two.tokensPerS / one.tokensPerS).toFixed(3)),
    }
  } finally {
    await workers.close()
    optimizer.dispose()
    disposeTransformer(policy)
  }
}
