import type { TaskRng } from '../rng.ts'
import type { ExpertOptions, Policy, Task, TaskEpisode, ToolOutcome } from '../task.ts'
import { mazeExpert } from './maze-expert.ts'
import { DIRECTIONS, type Direction, distances, isOpen, type MazeInstance, view } from './maze-grid.ts'

export type { Direction, MazeInstance } from './maze-grid.ts'

/**
 * `maze`: a text gridworld seen only nearby. The policy knows its position and the goal's, and
 * sees the 3x3 cells around it with `look()`; `move(direction)` moves one cell unless a wall is
 * there. Reward 1 for reaching the goal within the move budget. Difficulty (1..7) sets the size
 * and the share of walls; level 1 is a 3x3 room without walls. x grows east, y grows south.
 */

const LEVELS: readonly { size: number; walls: number }[] = [
  { size: 3, walls: 0 },
  { size: 4, walls: 0.1 },
  { size: 5, walls: 0.2 },
  { size: 6, walls: 0.25 },
  { size: 7, walls: 0.3 },
  { size: 8, walls: 0.3 },
  { size: 10, walls: 0.35 },
]

/** Generates a maze instance. */
export function generateMaze(rng: TaskRng, difficulty: number): MazeInstance {
  const { size, walls } = LEVELS[difficulty - 1]!
  for (;;) {
    const rows = Array.from({ length: size }, () =>
      Array.from({ length: size }, () => (rng.chance(walls) ? '#' : '.')).join(''),
    )
    const open: [number, number][] = []
    for (let y = 0; y < size; y++) for (let x = 0; x < size; x++) if (rows[y]![x] === '.') open.push([x, y])
    if (open.length < 2) continue
    const start = rng.pick(open)
    const base: MazeInstance = { size, rows, start, goal: start, budget: 0 }
    const d = distances(base, start)
    const far = open.filter(
      ([x, y]) => d[y * size + x]! >= size - 1 && d[y * size + x]! < Number.POSITIVE_INFINITY,
    )
    if (far.length === 0) continue
    const goal = rng.pick(far)
    return { size, rows, start, goal, budget: d[goal[1] * size + goal[0]]! + size }
  }
}

/** The `maze` task. */
export const maze: Task<MazeInstance> = {
  name: 'maze',
  description: 'a gridworld seen 3x3 at a time: reach the goal within a move budget',
  tools: [
    {
      type: 'function',
      function: {
        name: 'move',
        description: 'Move one cell',
        parameters: {
          type: 'object',
          properties: { direction: { type: 'string', enum: ['north', 'south', 'east', 'west'] } },
          required: ['direction'],
          additionalProperties: false,
        },
      },
    },
    {
      type: 'function',
      function: {
        name: 'look',
        description: 'See the 3x3 cells around you',
        parameters: { type: 'object', properties: {}, additionalProperties: false },
      },
    },
  ],
  limits: { maxTurns: 48, maxContextBytes: 8192, maxInvalidActions: 2 },
  difficulty: { min: 1, max: LEVELS.length, default: 1 },
  generate: generateMaze,
  key: (m) => `${m.rows.join('/')}|${m.start}|${m.goal}`,
  open(m): TaskEpisode {
    const dist = distances(m, m.goal)
    let [x, y] = m.start
    let moves = 0
    let lookedHere = false
    return {
      messages: [
        { role: 'system', content: 'Reach the goal with the tools. Plan briefly before each call.' },
        {
          role: 'user',
          content: `${m.size}x${m.size} maze, x east, y south. You: ${x},${y}. Goal: ${m.goal[0]},${m.goal[1]}. ${m.budget} moves.`,
        },
      ],
      call(name, args): ToolOutcome {
        if (name === 'look') {
          const good = !lookedHere
          lookedHere = true
          return { content: view(m, x, y), good }
        }
        const [dx, dy] = DIRECTIONS[args.direction as Direction]
        moves += 1
        const before = dist[y * m.size + x]!
        const blocked = !isOpen(m, x + dx, y + dy)
        if (!blocked) {
          x += dx
          y += dy
          lookedHere = false
        }
        const good = dist[y * m.size + x]! < before
        if (x === m.goal[0] && y === m.goal[1])
          return { content: 'goal reached', good, done: true, success: true }
        if (moves >= m.budget) return { content: 'out of moves', good, done: true, success: false }
        return { content: blocked ? `blocked; at ${x},${y}` : `at ${x},${y}`, good, toolError: blocked }
      },
    }
  },
  expert: (instance: MazeInstance, options: ExpertOptions): Policy => mazeExpert(instance, options),
}
