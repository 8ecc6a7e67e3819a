import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { distances, generateMaze, maze, TaskRng, view } from '../../../../actors/environment/index.ts'
import { mean, playMany } from './expert-check.ts'

const fixed = {
  size: 3,
  rows: ['...', '.#.', '...'],
  start: [0, 0] as [number, number],
  goal: [2, 2] as [number, number],
  budget: 4,
}

describe('actors/environment/tasks/maze', () => {
  it('maze - the goal is reachable and the budget covers the shortest path', () => {
    for (let d = 1; d <= 6; d++) {
      const rng = new TaskRng(d)
      for (let k = 0; k < 20; k++) {
        const m = generateMaze(rng, d)
        const dist = distances(m, m.start)[m.goal[1] * m.size + m.goal[0]]!
        assert.ok(Number.isFinite(dist) && dist >= m.size - 1)
        assert.equal(m.budget, dist + m.size)
      }
    }
  })

  it('maze - look shows the 3x3 view with walls outside the grid', () => {
    assert.equal(view(fixed, 0, 0), '###\n#@.\n#.#')
    assert.equal(view(fixed, 2, 1), '..#\n#@#\n.G#')
  })

  it('maze - moves report position, walls block, labels say whether the goal got closer', async () => {
    const ep = await maze.open(fixed)
    assert.deepEqual(await ep.call('look', {}), { content: view(fixed, 0, 0), good: true })
    assert.deepEqual(await ep.call('look', {}), { content: view(fixed, 0, 0), good: false })
    assert.deepEqual(await ep.call('move', { direction: 'north' }), {
      content: 'blocked; at 0,0',
      good: false,
      toolError: true,
    })
    assert.deepEqual(await ep.call('move', { direction: 'east' }), {
      content: 'at 1,0',
      good: true,
      toolError: false,
    })
    assert.deepEqual(await ep.call('move', { direction: 'west' }), {
      content: 'at 0,0',
      good: false,
      toolError: false,
    })
    assert.deepEqual(await ep.call('move', { direction: 'west' }), {
      content: 'out of moves',
      good: false,
      done: true,
      success: false,
    })
  })

  it('maze - reaching the goal ends with success', async () => {
    const ep = await maze.open(fixed)
    for (const d of ['south', 'south', 'east']) await ep.call('move', { direction: d })
    assert.deepEqual(await ep.call('move', { direction: 'east' }), {
      content: 'goal reached',
      good: true,
      done: true,
      success: true,
    })
  })

  it('maze - expert at error rate 0 reaches every goal with every step good', async () => {
    const ts = await playMany(maze, 3, 0, 1, 40)
    assert.ok(ts.every((t) => t.reward === 1 && t.stepGood.every((g) => g === 1)))
  })

  it('maze - expert succeeds at its configured rate (0.7 +- 0.1 over 200 seeds) and recovers from mistakes', async () => {
    const ts = await playMany(maze, 2, 0.25, 0.7, 200)
    const rate = mean(ts.map((t) => t.reward))
    assert.ok(Math.abs(rate - 0.7) <= 0.1, `success rate ${rate}`)
    const recovered = ts.filter((t) => t.reward === 1 && t.stepGood.includes(0))
    assert.ok(recovered.length > 20, `recovered ${recovered.length}`)
  })
})
