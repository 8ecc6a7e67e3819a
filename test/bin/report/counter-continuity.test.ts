import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import type { MetricsLine } from '../../../actors/index.ts'
import { parseMetricsLines } from '../../../actors/testing.ts'
import { continuousCounters } from '../../../bin/report/counter-continuity.ts'

const line = (id: string, step: number, values: Record<string, number>, role = 'rollout'): MetricsLine => ({
  role,
  id,
  step,
  time: 0,
  values,
})

describe('bin/report/counter-continuity', () => {
  it('continuousCounters - a resume resets the counters: the totals before it are added (metrics.jsonl)', () => {
    // A run resumed from its step-1 checkpoint after reaching step 2: the rollout starts again from 0.
    const text = [
      '{"role":"rollout","id":"rollout","step":0,"time":1,"values":{"rollout/episodes":4,"rollout/generated_tokens":1000,"rollout/success/calc":0.5}}',
      '{"role":"rollout","id":"rollout","step":1,"time":2,"values":{"rollout/episodes":10,"rollout/generated_tokens":2600,"rollout/success/calc":0.6}}',
      '{"role":"rollout","id":"rollout","step":2,"time":3,"values":{"rollout/episodes":13,"rollout/generated_tokens":3300,"rollout/success/calc":0.7}}',
      '{"role":"rollout","id":"rollout","step":1,"time":4,"values":{"rollout/episodes":3,"rollout/generated_tokens":700,"rollout/success/calc":0.4}}',
      '{"role":"rollout","id":"rollout","step":2,"time":5,"values":{"rollout/episodes":8,"rollout/generated_tokens":2000,"rollout/success/calc":0.8}}',
      '',
    ].join('\n')
    const { lines, resets } = continuousCounters(parseMetricsLines(text).lines)
    assert.deepEqual(
      lines.map((l) => [l.step, l.values['rollout/episodes'], l.values['rollout/generated_tokens']]),
      [
        [0, 4, 1000],
        [1, 10, 2600],
        [2, 13, 3300],
        [1, 16, 4000],
        [2, 21, 5300],
      ],
    )
    assert.deepEqual(
      lines.map((l) => l.values['rollout/success/calc']),
      [0.5, 0.6, 0.7, 0.4, 0.8],
      'gauges are not touched',
    )
    assert.deepEqual(resets, [{ actor: 'rollout:rollout', line: 3, step: 1 }])
  })

  it('continuousCounters - every segment adds up; one dropping counter restarts all of its actor', () => {
    const { lines, resets } = continuousCounters([
      line('r', 0, { 'rollout/episodes': 5, 'rollout/failed/env_error': 2 }),
      line('r', 1, { 'rollout/episodes': 1 }), // restart 1: failed/env_error is not reported yet
      line('r', 2, { 'rollout/episodes': 6, 'rollout/failed/env_error': 3 }),
      line('r', 3, { 'rollout/episodes': 2, 'rollout/failed/env_error': 4 }), // restart 2, seen in episodes
      line('r', 4, { 'rollout/episodes': 2, 'rollout/failed/env_error': 4 }), // equal: no restart
    ])
    assert.deepEqual(
      lines.map((l) => l.values),
      [
        { 'rollout/episodes': 5, 'rollout/failed/env_error': 2 },
        { 'rollout/episodes': 6 },
        { 'rollout/episodes': 11, 'rollout/failed/env_error': 5 },
        { 'rollout/episodes': 13, 'rollout/failed/env_error': 9 },
        { 'rollout/episodes': 13, 'rollout/failed/env_error': 9 },
      ],
    )
    assert.deepEqual(
      resets.map((r) => [r.line, r.step]),
      [
        [1, 1],
        [3, 3],
      ],
    )
  })

  it('continuousCounters - actors are apart; a new id after a resume is a new actor, not a restart', () => {
    const input = [
      line('a', 0, { 'rollout/episodes': 9 }),
      line('b', 0, { 'rollout/episodes': 2 }),
      line('a', 1, { 'rollout/episodes': 10 }),
      line('7577', 1, { 'process/rollout/restarts': 1 }, 'run'),
      line('8123', 2, { 'process/rollout/restarts': 0 }, 'run'),
      line('a', 2, { 'engine/tokens_per_s': 5 }),
    ]
    const before = JSON.stringify(input)
    const { lines, resets } = continuousCounters(input)
    assert.deepEqual(
      lines.map((l) => Object.values(l.values)[0]),
      [9, 2, 10, 1, 0, 5],
    )
    assert.deepEqual(resets, [])
    assert.equal(lines[5], input[5], 'a line without counters is the same object')
    assert.equal(JSON.stringify(input), before, 'the input is not changed')
  })

  it('continuousCounters - a value that is not finite is left as it is and restarts nothing', () => {
    const { lines, resets } = continuousCounters([
      line('r', 0, { 'rollout/episodes': 5 }),
      line('r', 1, { 'rollout/episodes': Number.NaN }),
      line('r', 2, { 'rollout/episodes': Number.NEGATIVE_INFINITY }),
      line('r', 3, { 'rollout/episodes': 7 }),
    ])
    assert.deepEqual(
      lines.map((l) => l.values['rollout/episodes']),
      [5, Number.NaN, Number.NEGATIVE_INFINITY, 7],
    )
    assert.deepEqual(resets, [])
  })

  it('continuousCounters - the keys counted can be given', () => {
    const { lines } = continuousCounters(
      [line('r', 0, { x: 3, y: 3 }), line('r', 1, { x: 1, y: 1 })],
      (k) => k === 'x',
    )
    assert.deepEqual(
      lines.map((l) => l.values),
      [
        { x: 3, y: 3 },
        { x: 4, y: 1 },
      ],
    )
  })
})
