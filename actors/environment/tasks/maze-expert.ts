import type { AssistantMessage, ChatMessage } from '../../../protocols/index.ts'
import { assistantTurns, deliberateTurn, lastToolResult } from '../deliberate-turn.ts'
import { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy } from '../task.ts'
import { DIRECTIONS, type Direction, distances, isOpen, type MazeInstance } from './maze-grid.ts'

/**
 * The scripted `maze` expert: looks once, then moves along a shortest path (it knows the layout),
 * tracking its position from the tool results. A mistake is a move into a wall (then it looks
 * again) or a move away from the goal (then it steps back). A failed episode wanders at random,
 * never onto the goal, until the moves run out.
 */

const OPPOSITE: Record<Direction, Direction> = { north: 'south', south: 'north', east: 'west', west: 'east' }
const NAMES = Object.keys(DIRECTIONS) as Direction[]

/** Makes the expert for one maze. */
export function mazeExpert(m: MazeInstance, options: ExpertOptions): Policy {
  const rng = new TaskRng(`maze-expert:${options.seed}:${m.rows.join('')}:${m.start}`)
  const fails = rng.chance(1 - options.successRate)
  const dist = distances(m, m.goal)
  let [x, y] = m.start
  let moves = 0
  let pending: { kind: 'wall' } | { kind: 'away'; back: Direction } | undefined
  const at = (dx: number, dy: number) => dist[(y + dy) * m.size + (x + dx)]!
  return {
    async act(messages: readonly ChatMessage[]): Promise<AssistantMessage> {
      const turn = assistantTurns(messages) + 1
      const result = lastToolResult(messages)
      const pos = result && /at (\d+),(\d+)/.exec(result)
      if (pos) {
        x = Number(pos[1])
        y = Number(pos[2])
      }
      if (result !== undefined && result !== '' && !result.includes('\n')) moves += 1
      if (turn === 1) return deliberateTurn('Look around first.', turn, 'look', {})
      if (pending?.kind === 'wall') {
        pending = undefined
        return deliberateTurn('Blocked. Look again.', turn, 'look', {})
      }
      if (pending?.kind === 'away') {
        const back = pending.back
        pending = undefined
        return deliberateTurn(`Wrong way; back ${back}.`, turn, 'move', { direction: back })
      }
      const open = NAMES.filter((d) => isOpen(m, x + DIRECTIONS[d][0], y + DIRECTIONS[d][1]))
      if (fails) {
        const wander = open.filter(
          (d) => !(x + DIRECTIONS[d][0] === m.goal[0] && y + DIRECTIONS[d][1] === m.goal[1]),
        )
        const dir = wander.length ? rng.pick(wander) : rng.pick(NAMES.filter((d) => !open.includes(d)))
        return deliberateTurn(`Try ${dir}.`, turn, 'move', { direction: dir })
      }
      const here = at(0, 0)
      const best = open.find((d) => at(DIRECTIONS[d][0], DIRECTIONS[d][1]) < here)!
      // A mistake costs up to two moves: make one only while the budget still covers it.
      if (rng.chance(options.errorRate) && m.budget - moves - here >= 2) {
        const walls = NAMES.filter((d) => !open.includes(d))
        const away = open.filter((d) => at(DIRECTIONS[d][0], DIRECTIONS[d][1]) >= here)
        if (walls.length && (away.length === 0 || rng.chance(0.5))) {
          const dir = rng.pick(walls)
          pending = { kind: 'wall' }
          return deliberateTurn(`Go ${dir}.`, turn, 'move', { direction: dir })
        }
        if (away.length) {
          const dir = rng.pick(away)
          pending = { kind: 'away', back: OPPOSITE[dir] }
          return deliberateTurn(`Go ${dir}.`, turn, 'move', { direction: dir })
        }
      }
      return deliberateTurn(`Go ${best}.`, turn, 'move', { direction: best })
    },
  }
}
