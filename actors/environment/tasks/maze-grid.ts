/**
 * The geometry of a maze: directions, open cells, shortest-path distances, the 3x3 view.
 * x grows east, y grows south.
 */

/** Directions and their offsets. */
export const DIRECTIONS = { north: [0, -1], south: [0, 1], east: [1, 0], west: [-1, 0] } as const
export type Direction = keyof typeof DIRECTIONS

/** A maze instance: `rows[y][x]` is `#` (wall) or `.` (open). */
export interface MazeInstance {
  size: number
  rows: string[]
  start: [number, number]
  goal: [number, number]
  /** Moves allowed (shortest path plus slack). */
  budget: number
}

/** Whether a cell is inside the grid and open. */
export function isOpen(m: MazeInstance, x: number, y: number): boolean {
  return x >= 0 && y >= 0 && x < m.size && y < m.size && m.rows[y]![x] === '.'
}

/** BFS distances from `from` to every cell (`Infinity` where unreachable), indexed `y * size + x`. */
export function distances(m: MazeInstance, from: [number, number]): number[] {
  const d = new Array<number>(m.size * m.size).fill(Number.POSITIVE_INFINITY)
  d[from[1] * m.size + from[0]] = 0
  const queue: [number, number][] = [from]
  for (let i = 0; i < queue.length; i++) {
    const [x, y] = queue[i]!
    for (const [dx, dy] of Object.values(DIRECTIONS)) {
      const nx = x + dx
      const ny = y + dy
      if (isOpen(m, nx, ny) && d[ny * m.size + nx] === Number.POSITIVE_INFINITY) {
        d[ny * m.size + nx] = d[y * m.size + x]! + 1
        queue.push([nx, ny])
      }
    }
  }
  return d
}

/** The 3x3 view around (x, y): `@` the agent, `G` the goal, `#` walls and the outside. */
export function view(m: MazeInstance, x: number, y: number): string {
  const lines: string[] = []
  for (let dy = -1; dy <= 1; dy++) {
    let line = ''
    for (let dx = -1; dx <= 1; dx++) {
      const cx = x + dx
      const cy = y + dy
      line +=
        dx === 0 && dy === 0
          ? '@'
          : cx === m.goal[0] && cy === m.goal[1]
            ? 'G'
            : isOpen(m, cx, cy)
              ? '.'
              : '#'
    }
    lines.push(line)
  }
  return lines.join('\n')
}
