import { appendFileSync } from 'node:fs'
import { createRunDir, type MetricsLine, type RunDir, writeEvalResult } from '../../actors/index.ts'
import { formatMetricsLine } from '../../actors/testing.ts'

/** Tasks of the synthetic run. */
export const SYNTHETIC_TASKS = ['calc', 'sql', 'maze'] as const

/**
 * The metric lines of a synthetic run of `steps` learner steps: per-task success, reward and
 * difficulty, the learner's loss (`loss/total`, as the learner reports it) and clip fractions, staleness, two engines' throughput and the reward
 * model's step accuracy. Values are exact functions of the step.
 */
export function syntheticMetrics(steps: number, t0 = Date.UTC(2026, 10, 29, 12)): MetricsLine[] {
  const out: MetricsLine[] = []
  for (let step = 0; step < steps; step++) {
    const time = t0 + step * 5_000
    const rollout: Record<string, number> = {}
    SYNTHETIC_TASKS.forEach((task, i) => {
      rollout[`rollout/success/${task}`] = Math.min(1, 0.1 * (i + 1) + step / 40)
      rollout[`rollout/reward/${task}`] = -0.5 + step / steps
      rollout[`env/difficulty/${task}`] = 1 + Math.floor(step / 10)
    })
    out.push({ role: 'rollout', id: '0', step, time, values: rollout })
    out.push({
      role: 'learner',
      id: '0',
      step,
      time,
      values: {
        'loss/total': 1 / (step + 1),
        'learner/clip_frac_high': 0.01 * step,
        'learner/clip_frac_low': 0.005 * step,
        'pipeline/staleness_mean': 1.5,
        'pipeline/staleness_max': 3,
        'reward/step_accuracy': 0.5 + step / 100,
      },
    })
    out.push({ role: 'policy', id: '0', step, time, values: { 'engine/tokens_per_s': 800 } })
    out.push({
      role: 'policy',
      id: '1',
      step,
      time,
      values: { 'engine/tokens_per_s': 600, 'runtime/restarts': 1 },
    })
  }
  return out
}

/**
 * The learner's reports of a cold-start SFT of `total` steps, steps 1 to `upTo`: one report per
 * step at learner step 0, `msPerStep` apart from `t0`, loss `2 - step / 100`, 4,000 tokens/s,
 * gradient norm 0.5.
 */
export function syntheticSftMetrics(
  upTo: number,
  total: number,
  msPerStep = 1_000,
  t0 = Date.UTC(2026, 10, 29, 11),
): MetricsLine[] {
  const out: MetricsLine[] = []
  for (let step = 1; step <= upTo; step++)
    out.push({
      role: 'learner',
      id: '0',
      step,
      axis: 'sft',
      time: t0 + step * msPerStep,
      values: {
        'sft/step': step,
        'sft/steps_total': total,
        'sft/loss': 2 - step / 100,
        'sft/tokens_per_s': 4000,
        'sft/grad_norm': 0.5,
      },
    })
  return out
}

/**
 * Makes a run directory under `runsDir` holding the synthetic metrics and one evaluation table;
 * `name` gives the run id's prefix (two runs made in one second need two names).
 */
export async function makeSyntheticRun(runsDir: string, steps = 30, name = 'synthetic'): Promise<RunDir> {
  const dir = await createRunDir({
    runsDir,
    name,
    recipe: { name, tasks: [{ name: 'calc' }] },
  })
  appendFileSync(dir.metricsFile, `${syntheticMetrics(steps).map(formatMetricsLine).join('\n')}\n`)
  await writeEvalResult(dir, `step-${String(steps).padStart(6, '0')}`, {
    title: 'held-out avg@8 and pass@8',
    step: steps,
    k: 8,
    rows: SYNTHETIC_TASKS.map((task) => ({
      task,
      difficulty: 1,
      n: 32,
      avg_at_k: 0.5,
      avg_at_k_se: 0.03,
      pass_at_k: 0.875,
      pass_at_k_se: 0.02,
    })),
  })
  return dir
}

/** Per-task metric families of `syntheticResumedRollout`: enough columns to overflow a page's width. */
export const SYNTHETIC_TASK_FAMILIES = [
  'rollout/success',
  'rollout/reward',
  'rollout/generated_tokens_mean',
  'env/difficulty',
  'env/accuracy',
  'env/instances',
  'learner/reward/mean',
  'learner/advantage/mean',
  'reward/step_reward_mean',
  'reward_model/step_accuracy',
] as const

/**
 * The rollout's reports of a run resumed once: steps 0 to `crashAt` (exclusive), then, after the
 * resume from the checkpoint of step `resumeFrom`, steps `resumeFrom` to `steps` (exclusive), with
 * its counters started again from 0. At each step: 8 episodes per task of `SYNTHETIC_TASKS`
 * (`rollout/episodes/<task>`, counted since the previous report), 60,000 generated tokens
 * (`rollout/generated_tokens`, `rollout/episodes`: totals since the process started), and every
 * family of `SYNTHETIC_TASK_FAMILIES` per task (value 0.5).
 */
export function syntheticResumedRollout(
  steps = 40,
  crashAt = 25,
  resumeFrom = 20,
  t0 = Date.UTC(2026, 10, 29, 12),
): MetricsLine[] {
  const out: MetricsLine[] = []
  const segments: [number, number][] = [
    [0, crashAt],
    [resumeFrom, steps],
  ]
  let time = t0
  for (const [from, to] of segments) {
    let episodes = 0
    let tokens = 0
    for (let step = from; step < to; step++) {
      episodes += 8 * SYNTHETIC_TASKS.length
      tokens += 60_000
      const values: Record<string, number> = {
        'rollout/episodes': episodes,
        'rollout/generated_tokens': tokens,
      }
      for (const task of SYNTHETIC_TASKS) {
        values[`rollout/episodes/${task}`] = 8
        for (const family of SYNTHETIC_TASK_FAMILIES) values[`${family}/${task}`] = 0.5
      }
      time += 5_000
      out.push({ role: 'rollout', id: 'rollout', step, time, values })
    }
  }
  return out
}
