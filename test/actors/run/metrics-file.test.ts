import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { formatMetricsLine, parseMetricsLines } from '../../../actors/testing.ts'

describe('actors/run/metrics-file', () => {
  it('parseMetricsLines - reads reports and records torn or foreign lines by number', () => {
    const good = { role: 'learner', id: '0', step: 3, time: 1000, values: { 'learner/loss': 0.5 } }
    const text = `${formatMetricsLine(good)}\n\nnot json\n{"role":"x"}\n${formatMetricsLine({ ...good, step: 4 })}\n{"role":"learner","id":`
    const parsed = parseMetricsLines(text)
    assert.deepEqual(
      parsed.lines.map((l) => l.step),
      [3, 4],
    )
    assert.deepEqual(parsed.lines[0], good)
    assert.deepEqual(parsed.bad, [3, 4, 6])
  })
})
