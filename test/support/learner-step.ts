import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { type MetricsLine, onLearnerAxis, readLatestCheckpoint } from '../../actors/index.ts'

/**
 * The highest learner step a run directory shows so far (0 before the first RL step): the newest
 * in metrics.jsonl, or the version of the newest checkpoint (`checkpoints/latest.json`) where that
 * is higher. The learner's metrics reach metrics.jsonl over core NATS, which drops them while a
 * route to a lost server is open (docs/scaling.md); the checkpoint record is a file the learner
 * writes itself. SFT lines count SFT steps on their own axis, so they are left out.
 */
export function learnerStep(dir: string): number {
  const file = join(dir, 'metrics.jsonl')
  let step = readLatestCheckpoint(join(dir, 'checkpoints'))?.version ?? 0
  if (!existsSync(file)) return step
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.includes('"role":"learner"')) continue
    const l = JSON.parse(line) as MetricsLine
    if (onLearnerAxis(l)) step = Math.max(step, l.step)
  }
  return step
}
