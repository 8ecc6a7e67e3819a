/**
 * `triad bench tokenizer`: byte-pair merges learned from the expert corpus against the byte-level
 * base (0 merges). Learns merges from expert trajectories of every built-in task at every
 * difficulty (`learnSeeds` seeds each, error rate 0.2, success rate 0.9; rendered with the byte-level
 * tokenizer, `learnBytes` counts their ids, special tokens included), then measures on held-out
 * seeds: tokens per rendered trajectory (p50 / max, per task at its easiest difficulty and over all
 * difficulties), assistant (loss-masked) tokens, encode speed (cold: a fresh tokenizer; warm: its
 * chunk cache filled), and the time of SFT steps over the same held-out trajectories for the
 * quickstart model (2 layers, width 128, 4 heads, context 768) with the vocabulary of each
 * tokenizer (each step timed `stepReps` times, fastest kept). Rates are per wall-clock second and per second of this process's CPU time (the
 * machine is shared); ratios are against 0 merges in the same run.
 */

import { type AnyTask, type PlayedEpisode, playExpert, tasks } from '../../actors/index.ts'
import {
  AdamW,
  chooseBackend,
  createTransformer,
  disposeTransformer,
  learnTaskTokenizer,
  makeBatches,
  type RenderedChat,
  renderChat,
  sftStep,
  Tokenizer,
} from '../../gpu/index.ts'

interface Timing {
  wallMs: number
  cpuMs: number
}

async function timed(body: () => Promise<void> | void): Promise<Timing> {
  const c0 = process.cpuUsage()
  const t0 = performance.now()
  await body()
  const c = process.cpuUsage(c0)
  return { wallMs: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 }
}

const round = (x: number, digits = 1) => Number(x.toFixed(digits))

/** p50 and max of a list of counts. */
function spread(xs: number[]): { p50: number; max: number } {
  const s = [...xs].sort((a, b) => a - b)
  return { p50: s[(s.length - 1) >> 1]!, max: s[s.length - 1]! }
}

async function expertTrajectories(
  task: AnyTask,
  difficulty: number,
  seeds: number[],
): Promise<PlayedEpisode[]> {
  const out: PlayedEpisode[] = []
  for (const seed of seeds)
    out.push(
      await playExpert(task, { seed, difficulty }, { errorRate: 0.2, successRate: 0.9, seed: 1000 + seed }),
    )
  return out
}

export async function run(options: { quick?: boolean }) {
  const quick = options.quick === true
  const sizes = quick
    ? { learnSeeds: 4, testSeeds: 4, mergeCounts: [0, 256], trainPerTask: 1, encodeMs: 100, stepReps: 1 }
    : {
        learnSeeds: 24,
        testSeeds: 16,
        mergeCounts: [0, 256, 512],
        trainPerTask: 4,
        encodeMs: 500,
        stepReps: 3,
      }
  const model = { layers: 2, width: 128, heads: 4, contextLength: 768 }
  const byte = new Tokenizer()

  // Corpus: learning seeds 0..learnSeeds-1; held-out seeds after them. Every difficulty level.
  const learnIdx = Array.from({ length: sizes.learnSeeds }, (_, i) => i)
  const testIdx = Array.from({ length: sizes.testSeeds }, (_, i) => 10_000 + i)
  const learnIds: Int32Array[] = []
  const held: { task: string; difficulty: number; easiest: boolean; t: PlayedEpisode }[] = []
  for (const task of Object.values(tasks))
    for (let d = task.difficulty.min; d <= task.difficulty.max; d++) {
      for (const t of await expertTrajectories(task, d, learnIdx))
        learnIds.push(renderChat(byte, t.messages, { tools: t.tools }).ids)
      for (const t of await expertTrajectories(task, d, testIdx))
        held.push({ task: task.name, difficulty: d, easiest: d === task.difficulty.min, t })
    }
  const heldTexts = held.map((h) => byte.decode(renderChat(byte, h.t.messages, { tools: h.t.tools }).ids))
  const heldBytes = heldTexts.reduce((s, t) => s + Buffer.byteLength(t), 0)

  const backend = await chooseBackend({ log: () => {} })
  const results = []
  let baseTrainMs: Timing | undefined
  let baseTokens = 0
  for (const merges of sizes.mergeCounts) {
    let tok: Tokenizer = byte
    const learn = await timed(() => {
      tok = merges === 0 ? byte : learnTaskTokenizer(learnIds, merges)
    })
    const rendered: RenderedChat[] = held.map((h) => renderChat(tok, h.t.messages, { tools: h.t.tools }))
    const perTask: Record<string, unknown> = {}
    for (const name of Object.keys(tasks)) {
      const easiest = rendered.filter((_, i) => held[i]!.task === name && held[i]!.easiest)
      const all = rendered.filter((_, i) => held[i]!.task === name)
      perTask[name] = {
        easiest: spread(easiest.map((r) => r.ids.length)),
        allDifficulties: spread(all.map((r) => r.ids.length)),
        assistantTokensEasiest: spread(easiest.map((r) => r.lossMask.reduce((s, m) => s + m, 0))),
      }
    }
    const totalTokens = rendered.reduce((s, r) => s + r.ids.length, 0)
    if (merges === 0) baseTokens = totalTokens

    // Encode speed over the held-out texts: cold (fresh tokenizer, empty chunk cache), then warm.
    const fresh = new Tokenizer(tok.settings)
    const cold = await timed(() => {
      for (const text of heldTexts) fresh.encode(text, { allowSpecial: true })
    })
    let passes = 0
    const warm = await timed(() => {
      const t0 = performance.now()
      do {
        for (const text of heldTexts) fresh.encode(text, { allowSpecial: true })
        passes++
      } while (performance.now() - t0 < sizes.encodeMs)
    })
    const mbPerS = (bytes: number, t: Timing) => ({
      wall: round(bytes / t.wallMs / 1e3, 2),
      cpu: round(bytes / t.cpuMs / 1e3, 2),
    })

    // SFT steps over the same held-out trajectories (trainPerTask per task, easiest level).
    const trainSet: RenderedChat[] = []
    for (const name of Object.keys(tasks))
      trainSet.push(
        ...rendered.filter((_, i) => held[i]!.task === name && held[i]!.easiest).slice(0, sizes.trainPerTask),
      )
    const cut = trainSet.filter((r) => r.ids.length > model.contextLength + 1).length
    const batches = makeBatches(trainSet, {
      batchTokens: 4 * model.contextLength,
      contextLength: model.contextLength,
      padId: tok.padId,
    })
    const transformer = createTransformer({ ...model, vocabSize: tok.vocabSize }, { seed: 1 })
    const optimizer = new AdamW(transformer.params)
    await sftStep(transformer, optimizer, batches[0]!, 1e-4) // warm-up
    // Each batch's step timed `stepReps` times, the fastest kept (the machine is shared).
    const train: Timing = { wallMs: 0, cpuMs: 0 }
    for (const batch of batches) {
      const reps: Timing[] = []
      for (let r = 0; r < sizes.stepReps; r++)
        reps.push(await timed(async () => void (await sftStep(transformer, optimizer, batch, 1e-4))))
      train.wallMs += Math.min(...reps.map((t) => t.wallMs))
      train.cpuMs += Math.min(...reps.map((t) => t.cpuMs))
    }
    optimizer.dispose()
    disposeTransformer(transformer)
    if (merges === 0) baseTrainMs = train
    const paddedTokens = batches.reduce((s, b) => s + b.batch * b.seqLen, 0)

    results.push({
      merges: tok.mergeCount,
      mergesAsked: merges,
      vocabSize: tok.vocabSize,
      learnMs: { wall: round(learn.wallMs), cpu: round(learn.cpuMs) },
      tokensPerTrajectory: perTask,
      bytesPerToken: round(heldBytes / totalTokens, 2),
      tokensVsBytes: round(totalTokens / baseTokens, 3),
      encode: {
        coldMBPerSecond: mbPerS(heldBytes, cold),
        warmMBPerSecond: mbPerS(heldBytes * passes, warm),
        warmTokensPerSecond: round((totalTokens * passes) / (warm.wallMs / 1000), 0),
      },
      sft: {
        trajectories: trainSet.length,
        cutAtContext: cut,
        steps: batches.length,
        stepReps: sizes.stepReps,
        paddedTokens,
        ms: { wall: round(train.wallMs), cpu: round(train.cpuMs) },
        msPerTrajectory: {
          wall: round(train.wallMs / trainSet.length),
          cpu: round(train.cpuMs / trainSet.length),
        },
        timeVsBytes: baseTrainMs
          ? {
              wall: round(train.wallMs / baseTrainMs.wallMs, 3),
              cpu: round(train.cpuMs / baseTrainMs.cpuMs, 3),
            }
          : undefined,
      },
    })
  }
  return {
    bench: 'tokenizer',
    backend: backend.name,
    quick,
    corpus: {
      tasks: Object.keys(tasks),
      learnTrajectories: learnIds.length,
      learnBytes: learnIds.reduce((s, ids) => s + ids.length, 0),
      heldOutTrajectories: held.length,
      heldOutBytes: heldBytes,
      expert: { errorRate: 0.2, successRate: 0.9 },
    },
    model: { ...model, batchTokens: 4 * model.contextLength },
    clocks: 'each rate per wall-clock second and per second of this process CPU time',
    results,
  }
}
