import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type MetricsLine, onLearnerAxis } from '../../actors/index.ts'

/**
 * The highest learner step in a run directory's metrics.jsonl so far (0 before the first RL
 * step). SFT lines count SFT steps on their own axis, so they are left out.
 */
export function learnerStep(dir: string): number {
  const file = join(dir, 'metrics.jsonl')
  if (!existsSync(file)) return 0
  let step = 0
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"role":"learner"')) continue
    const l = JSON.parse(line) as MetricsLine
    if (onLearnerAxis(l)) step = Math.max(step, l.step)
  }
  return step
}
