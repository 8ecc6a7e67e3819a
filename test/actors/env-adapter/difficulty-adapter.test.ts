import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  AdaptAction,
  AdaptGranularity,
  DifficultyAdapter,
  DifficultyView,
  trajectorySuccess,
} from '../../../actors/env-adapter/index.ts'
import { ConfigError } from '../../../gpu/index.ts'

const levels = { calc: { min: 1, max: 5, default: 1 }, maze: { min: 1, max: 4, default: 3 } }

/** Plays `pattern` (1 success, 0 failure) on one instance at its current level; returns the last decision. */
function play(a: DifficultyAdapter, task: string, index: number, pattern: number[]) {
  let last: ReturnType<DifficultyAdapter['record']>
  for (const s of pattern) {
    const d = a.record({ task, index, difficulty: a.levelOf(task, index)!, success: s === 1 })
    if (d) last = d
  }
  return last
}

describe('actors/env-adapter/difficulty-adapter', () => {
  it('adapter - a mastered instance (accuracy >= 0.8) goes one level harder, and the change is accepted', () => {
    const a = new DifficultyAdapter({ tasks: levels, window: 5 })
    // 4 of 5 = 0.8: mastered (>= 0.8 raises)
    assert.deepEqual(play(a, 'calc', 7, [1, 1, 0, 1, 1]), {
      task: 'calc',
      instance: '7',
      action: AdaptAction.Raised,
      from: 1,
      to: 2,
      accuracy: 0.8,
    })
    assert.equal(a.levelOf('calc', 7), 2)
    assert.equal(a.levelOf('calc', 8), 1, 'other instances keep the default')
    // At level 2: 2 of 5 = 0.4: some successes, lower than 0.8, inside [0.2, 0.8] -> kept
    assert.equal(play(a, 'calc', 7, [1, 0, 0, 1, 0])?.action, AdaptAction.Accepted)
    assert.equal(a.levelOf('calc', 7), 2)
    assert.deepEqual(a.decisionCounts(), { raised: 1, lowered: 0, accepted: 1, dropped: 0 })
  })

  it('adapter - a failed instance (accuracy < 0.2) goes one level easier, and the change is accepted', () => {
    const a = new DifficultyAdapter({ tasks: levels, window: 5 })
    // maze default 3; 0 of 5 -> lowered to 2
    assert.equal(play(a, 'maze', 0, [0, 0, 0, 0, 0])?.action, AdaptAction.Lowered)
    assert.equal(a.levelOf('maze', 0), 2)
    // 3 of 5 = 0.6 > 0: moved up, inside -> kept
    assert.equal(play(a, 'maze', 0, [1, 1, 0, 1, 0])?.action, AdaptAction.Accepted)
    assert.equal(a.levelOf('maze', 0), 2)
    // 0.2 exactly is not < 0.2: no change
    assert.equal(play(a, 'maze', 0, [1, 0, 0, 0, 0]), undefined)
  })

  it('adapter - a change that breaks the acceptance rule is dropped, back to the previous level', () => {
    const a = new DifficultyAdapter({ tasks: levels, window: 4 })
    // Raised, then no success at all at the harder level -> dropped
    play(a, 'calc', 1, [1, 1, 1, 1])
    assert.equal(a.levelOf('calc', 1), 2)
    const d = play(a, 'calc', 1, [0, 0, 0, 0])
    assert.deepEqual(d, {
      task: 'calc',
      instance: '1',
      action: AdaptAction.Dropped,
      from: 2,
      to: 1,
      accuracy: 0,
    })
    assert.equal(a.levelOf('calc', 1), 1)
    // Raised, then still mastered (1.0: not lower, not inside [0.2, 0.8]) -> dropped
    play(a, 'calc', 2, [1, 1, 1, 1])
    assert.equal(play(a, 'calc', 2, [1, 1, 1, 1])?.action, AdaptAction.Dropped)
    assert.equal(a.levelOf('calc', 2), 1)
    // Lowered, then accuracy 0.25 -> 1.0 moved the right way but left [0.2, 0.8] -> dropped
    play(a, 'maze', 3, [0, 0, 0, 0])
    assert.equal(a.levelOf('maze', 3), 2)
    assert.equal(play(a, 'maze', 3, [1, 1, 1, 1])?.action, AdaptAction.Dropped)
    assert.equal(a.levelOf('maze', 3), 3)
    // Raised from 0.75 -> no: 0.75 < 0.8 does not raise
    assert.equal(play(a, 'calc', 4, [1, 1, 1, 0]), undefined)
    assert.deepEqual(a.decisionCounts(), { raised: 2, lowered: 1, accepted: 0, dropped: 3 })
  })

  it('adapter - episodes at another level than the current one are ignored; levels stay within min..max', () => {
    const a = new DifficultyAdapter({ tasks: { calc: { min: 1, max: 2, default: 2 } }, window: 2 })
    assert.equal(a.record({ task: 'calc', index: 0, difficulty: 1, success: true }), undefined)
    assert.equal(a.record({ task: 'calc', index: 0, difficulty: 1, success: true }), undefined)
    assert.equal(a.levelOf('calc', 0), 2, 'stale-level episodes do not count')
    assert.equal(play(a, 'calc', 0, [1, 1]), undefined, 'already at max')
    assert.equal(a.record({ task: 'other', index: 0, difficulty: 1, success: true }), undefined)
    assert.equal(a.levelOf('other', 0), undefined)
  })

  it('adapter - metrics give the mean level and the histogram per task; env.difficulty lists changed instances', () => {
    const a = new DifficultyAdapter({ tasks: levels, window: 2 })
    play(a, 'calc', 0, [1, 1]) // -> 2
    play(a, 'calc', 1, [0, 1]) // stays 1
    play(a, 'calc', 2, [1, 1]) // -> 2
    play(a, 'calc', 3, [0, 0]) // at min: stays 1
    const m = a.metrics()
    assert.equal(m['env/difficulty/calc'], 1.5)
    assert.equal(m['env/difficulty/calc/level_1'], 0.5)
    assert.equal(m['env/difficulty/calc/level_2'], 0.5)
    assert.equal(m['env/difficulty/calc/level_3'], 0)
    assert.equal(m['env/instances/calc'], 4)
    assert.equal(m['env/accuracy/calc'], (1 + 0.5 + 1 + 0) / 4)
    assert.equal(m['env/difficulty/maze'], 3, 'no instance tracked: the default')
    assert.equal(m['env/adapter/raised'], 2)
    assert.equal(m['env/adapter/enabled'], 1)
    assert.deepEqual(a.difficulty(), {
      revision: 2,
      adaptive: true,
      tasks: { calc: { default: 1, levels: { '0': 2, '2': 2 } }, maze: { default: 3, levels: {} } },
    })
  })

  it('adapter - per-task granularity keeps one level per task, whatever the instance', () => {
    const a = new DifficultyAdapter({ tasks: levels, window: 2, granularity: AdaptGranularity.Task })
    a.record({ task: 'calc', index: 5, difficulty: 1, success: true })
    a.record({ task: 'calc', index: 9, difficulty: 1, success: true })
    assert.equal(a.levelOf('calc', 123), 2)
    assert.deepEqual(a.difficulty().tasks.calc, { default: 2, levels: {} })
  })

  it('adapter - switched off, accuracy is measured but no level ever changes', () => {
    const a = new DifficultyAdapter({ tasks: levels, window: 2, enabled: false })
    assert.equal(play(a, 'calc', 0, [1, 1, 1, 1]), undefined)
    assert.equal(play(a, 'maze', 0, [0, 0, 0, 0]), undefined)
    assert.equal(a.levelOf('calc', 0), 1)
    assert.equal(a.levelOf('maze', 0), 3)
    const m = a.metrics()
    assert.equal(m['env/adapter/enabled'], 0)
    assert.equal(m['env/adapter/raised'], 0)
    assert.equal(m['env/adapter/lowered'], 0)
    assert.equal(m['env/accuracy/calc'], 1)
    assert.equal(a.difficulty().adaptive, false)
  })

  it('adapter - success is the success metric when present, else reward > 0; bad settings throw', () => {
    assert.equal(trajectorySuccess({ reward: 1, metrics: { success: 0 } }), false)
    assert.equal(trajectorySuccess({ reward: 0.5, metrics: {} }), true)
    assert.equal(trajectorySuccess({ reward: 0, metrics: {} }), false)
    assert.throws(() => new DifficultyAdapter({ tasks: levels, window: 0 }), ConfigError)
    assert.throws(() => new DifficultyAdapter({ tasks: levels, raiseAt: 0.1 }), /lowerAt < raiseAt/)
    assert.throws(
      () => new DifficultyAdapter({ tasks: { t: { min: 2, max: 3, default: 1 } } }),
      /min <= default <= max/,
    )
  })
})

describe('actors/env-adapter/difficulty-view', () => {
  it('view - keeps the newest revision and answers per-instance levels with the task default', () => {
    const v = new DifficultyView()
    assert.equal(v.revision, -1)
    assert.equal(v.levelFor('calc', 0), undefined)
    assert.ok(v.update({ revision: 2, adaptive: true, tasks: { calc: { default: 1, levels: { '4': 3 } } } }))
    assert.equal(v.levelFor('calc', 4), 3)
    assert.equal(v.levelFor('calc', 5), 1)
    assert.equal(v.levelFor('sql', 5), undefined)
    assert.equal(
      v.update({ revision: 1, adaptive: true, tasks: { calc: { default: 1, levels: {} } } }),
      false,
    )
    assert.equal(v.levelFor('calc', 4), 3, 'an older message is ignored')
  })
})
