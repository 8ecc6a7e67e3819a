import type { AnyTask, PlayedEpisode } from '../../../../actors/environment/index.ts'
import { playExpert } from '../../../../actors/environment/index.ts'

/** Plays the expert on `seeds` seeds and returns the trajectories. */
export async function playMany(
  task: AnyTask,
  difficulty: number,
  errorRate: number,
  successRate: number,
  seeds: number,
): Promise<PlayedEpisode[]> {
  const out: PlayedEpisode[] = []
  for (let s = 0; s < seeds; s++)
    out.push(await playExpert(task, { seed: s, difficulty }, { errorRate, successRate, seed: 1000 + s }))
  return out
}

/** Mean of numbers. */
export const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
