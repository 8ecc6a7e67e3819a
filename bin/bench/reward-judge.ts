/**
 * `triad bench reward-judge`: the reward model's judging and training on real maze episodes, each
 * against the generic path in the same run and backend.
 * - Judging: `RewardModel.judge` draws the m verdicts of a step from one next-token distribution (one
 *   forward pass over the batch of prompts) against `generate` on every prompt repeated m times with
 *   one new token (what a policy engine would do).
 * - Training: `trainRewardModelStep` on the `[steps, m]` verdict matrix (one forward and backward per
 *   prompt) against `rlStep` on the equivalent `RlBatch` with one row per judgement.
 */
import {
  buildRewardModelBatch,
  episodeJudgeSteps,
  getTask,
  playExpert,
  RewardModel,
  TRIAD_SWITCHES_DEFAULTS,
  trainRewardModelStep,
} from '../../actors/index.ts'
import {
  AdamW,
  chooseBackend,
  generate,
  REWARD_MODEL_STEP_DEFAULTS,
  RL_STEP_DEFAULTS,
  type RlBatch,
  rlStep,
} from '../../gpu/index.ts'
import type { JudgeStep } from '../../protocols/index.ts'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
const round = (x: number) => Number(x.toFixed(1))

async function timeIt(reps: number, f: () => Promise<unknown>): Promise<number> {
  await f() // warm-up
  const times: number[] = []
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now()
    await f()
    times.push(performance.now() - t0)
  }
  return median(times)
}

export async function run(options: { quick?: boolean }) {
  const backend = await chooseBackend({ log: () => {} }) // TRIAD_BACKEND forces one
  const reps = options.quick ? 1 : 3
  const m = 8
  const config = { layers: 2, width: 64, heads: 4, contextLength: 512, vocabSize: 264 }
  const maze = getTask('maze')
  const steps: JudgeStep[] = []
  // The first two steps of each episode, so every prompt stays near 300 tokens.
  for (let i = 0; steps.length < (options.quick ? 4 : 8); i++) {
    const ep = await playExpert(
      maze,
      { difficulty: 1, index: i },
      { errorRate: 0.3, successRate: 0.8, seed: i },
    )
    steps.push(...episodeJudgeSteps('maze', ep.messages).slice(0, 2))
  }
  const rm = new RewardModel({ config, seed: 0 })
  const prompts = rm.renderPrompts(steps)
  const promptTokens = prompts.reduce((s, p) => s + p.length, 0)

  const log = (what: string) => process.stderr.write(`reward-judge: ${what}\n`)
  log(`${steps.length} steps, prompt lengths ${prompts.map((p) => p.length).join(' ')}`)
  const judgeMs = await timeIt(reps, () => rm.judge(steps, m, 1))
  log(`judge ${round(judgeMs)} ms`)
  const repeated = prompts.flatMap((p) => Array.from({ length: m }, () => p))
  const generateMs = await timeIt(reps, () => generate(rm.model, repeated, { maxNewTokens: 1, seed: 1 }))

  log(`generate ${round(generateMs)} ms`)
  // Training on 4 steps (32 judgements): one row per judgement over ~300-token prompts is as much as
  // the generic path fits in wasm memory (8 steps ran out of it).
  const trainSteps = steps.slice(0, 4)
  const judged = await rm.judge(trainSteps, m, 1)
  const judgedSteps = trainSteps.map((_, j) => ({
    prompt: prompts[j]!,
    outcome: j % 2 ? 1 : -1,
    tokens: judged.tokens.subarray(j * m, (j + 1) * m),
    logprobs: judged.logprobs.subarray(j * m, (j + 1) * m),
    judgements: judged.judgements.subarray(j * m, (j + 1) * m),
  }))
  const { batch } = buildRewardModelBatch(judgedSteps)
  const optimizer = new AdamW(rm.model.params)
  const trainMs = await timeIt(reps, () =>
    trainRewardModelStep(
      { model: rm.model, optimizer, lr: 1e-4 },
      batch,
      TRIAD_SWITCHES_DEFAULTS,
      REWARD_MODEL_STEP_DEFAULTS,
    ),
  )
  log(`train ${round(trainMs)} ms`)
  // The same judgements as an RlBatch: one row per judgement, prompt + verdict, right-padded.
  const seqLen = Math.max(...prompts.slice(0, trainSteps.length).map((p) => p.length)) + 1
  const rows = trainSteps.length * m
  const rl: RlBatch = {
    batch: rows,
    seqLen,
    tokens: new Int32Array(rows * seqLen),
    lossMask: new Float32Array(rows * seqLen),
    behaviorLogprobs: new Float32Array(rows * seqLen),
    weightVersions: new Int32Array(rows * seqLen),
    tasks: Array.from({ length: rows }, () => 'maze'),
    groupIds: Array.from({ length: rows }, (_, k) => `s${Math.floor(k / m)}`),
    rewards: new Float32Array(rows),
    stepAdvantages: new Float32Array(rows * seqLen),
  }
  for (let k = 0; k < rows; k++) {
    const p = prompts[Math.floor(k / m)]!
    const at = k * seqLen + p.length
    rl.tokens.set(p, k * seqLen)
    rl.tokens[at] = batch.tokens[k]!
    rl.lossMask[at] = 1
    rl.behaviorLogprobs[at] = batch.behaviorLogprobs[k]!
    rl.stepAdvantages![at] = batch.advantages[k]!
  }
  const rlMs = await timeIt(reps, () =>
    rlStep({ model: rm.model, optimizer, lr: 1e-4, version: 0 }, rl, {
      ...RL_STEP_DEFAULTS,
      taskAdvantageNorm: false,
    }),
  )
  optimizer.dispose()
  rm.dispose()
  return {
    backend: backend.name,
    model: config,
    steps: steps.length,
    m,
    prompt_tokens_mean: round(promptTokens / steps.length),
    judge: {
      shared_distribution_ms: round(judgeMs),
      generate_repeated_ms: round(generateMs),
      speedup: round(generateMs / judgeMs),
    },
    train: {
      steps: trainSteps.length,
      verdict_matrix_ms: round(trainMs),
      rl_step_rows_ms: round(rlMs),
      speedup: round(rlMs / trainMs),
    },
  }
}
