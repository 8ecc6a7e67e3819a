import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, constantLr, warmupCosine } from '../../gpu/index.ts'

describe('gpu/lr-schedule', () => {
  it('lr-schedule - linear warm-up then cosine to the floor', () => {
    const lr = warmupCosine({ peakLr: 1, warmupSteps: 4, totalSteps: 14, minLr: 0.1 })
    assert.deepEqual([0, 1, 2, 3].map(lr), [0.25, 0.5, 0.75, 1])
    assert.equal(lr(4), 1) // cosine starts at the peak
    assert.ok(Math.abs(lr(9) - 0.55) < 1e-12) // halfway: (1 + 0.1) / 2
    assert.ok(Math.abs(lr(14) - 0.1) < 1e-12)
    assert.equal(lr(100), 0.1)
    for (let s = 4; s < 14; s++) assert.ok(lr(s + 1) <= lr(s))
  })

  it('lr-schedule - default floor is a tenth of the peak; no warm-up starts at the peak', () => {
    const lr = warmupCosine({ peakLr: 2e-3, warmupSteps: 0, totalSteps: 10 })
    assert.equal(lr(0), 2e-3)
    assert.ok(Math.abs(lr(10) - 2e-4) < 1e-15)
    assert.equal(constantLr(0.5)(123), 0.5)
  })

  it('lr-schedule - bad settings are rejected', () => {
    assert.throws(() => warmupCosine({ peakLr: 0, warmupSteps: 0, totalSteps: 1 }), ConfigError)
    assert.throws(() => warmupCosine({ peakLr: 1, warmupSteps: 5, totalSteps: 3 }), /totalSteps/)
    assert.throws(() => warmupCosine({ peakLr: 1, warmupSteps: 0, totalSteps: 3, minLr: 2 }), /minLr/)
    assert.throws(() => constantLr(-1), ConfigError)
  })
})
