import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  ArithmeticError,
  calc,
  evaluate,
  formatNumber,
  generateCalc,
  TaskRng,
} from '../../../../actors/environment/index.ts'
import { mean, playMany } from './expert-check.ts'

describe('actors/environment/tasks/calc', () => {
  it('arithmetic - precedence, parentheses, unary minus and decimals', () => {
    assert.equal(evaluate('2+3*4'), 14)
    assert.equal(evaluate('(2+3)*4'), 20)
    assert.equal(evaluate('-3 - -2'), -1)
    assert.equal(evaluate('1,250 / 5'), 250)
    assert.equal(formatNumber(evaluate('10/4')), '2.5')
    assert.equal(formatNumber(evaluate('1/3')), '0.333333')
  })

  it('arithmetic - bad input is an ArithmeticError with where it failed', () => {
    assert.throws(
      () => evaluate('2+'),
      (e: unknown) => e instanceof ArithmeticError && e.message === 'expected a number at end',
    )
    assert.throws(() => evaluate('2/(1-1)'), /division by zero/)
    assert.throws(() => evaluate('process.exit()'), /expected a number at 'process.'/)
    assert.throws(() => evaluate('(1+2'), /expected '\)'/)
  })

  it('calc - instances follow their chain; from level 2 on they need at least one multiplication', () => {
    for (let d = 1; d <= 7; d++) {
      const rng = new TaskRng(d)
      for (let k = 0; k < 30; k++) {
        const i = generateCalc(rng, d)
        let v = i.start
        i.ops.forEach((o, j) => {
          v = o.op === '+' ? v + o.n : o.op === '-' ? v - o.n : o.op === '*' ? v * o.n : v / o.n
          assert.equal(i.values[j], v)
        })
        assert.equal(i.answer, v)
        assert.ok(Number.isInteger(v) && v > 0, `${i.question} -> ${v}`)
        if (d === 1) assert.equal(i.ops.length, 1)
        else assert.ok(i.ops.some((o) => o.op === '*'))
      }
    }
  })

  it('calc - a calculator error is a tool message, not an invalid action', async () => {
    const ep = await calc.open(generateCalc(new TaskRng(1), 1))
    assert.deepEqual(await ep.call('calculator', { expression: '2+' }), {
      content: 'error: expected a number at end',
      good: false,
      toolError: true,
    })
  })

  it('calc - expert at error rate 0 solves every instance with every step good', async () => {
    const ts = await playMany(calc, 3, 0, 1, 40)
    assert.ok(ts.every((t) => t.reward === 1 && t.status === 'completed'))
    assert.ok(ts.every((t) => t.stepGood.every((g) => g === 1)))
    // Level 1 trajectories stay a few hundred bytes of text.
    const small = await playMany(calc, 1, 0, 1, 40)
    assert.ok(mean(small.map((t) => t.metrics.context_bytes!)) < 400)
  })

  it('calc - expert succeeds at its configured rate (0.7 +- 0.1 over 200 seeds) and recovers from mistakes', async () => {
    const ts = await playMany(calc, 4, 0.3, 0.7, 200)
    const rate = mean(ts.map((t) => t.reward))
    assert.ok(Math.abs(rate - 0.7) <= 0.1, `success rate ${rate}`)
    // With mistakes, some solved trajectories hold a bad step followed by a recovery.
    const recovered = ts.filter((t) => t.reward === 1 && t.stepGood.includes(0))
    assert.ok(recovered.length > 20, `recovered ${recovered.length}`)
    assert.ok(
      recovered.every((t) => t.messages.some((m) => m.role === 'assistant' && /^Typo/.test(m.content ?? ''))),
    )
  })
})
