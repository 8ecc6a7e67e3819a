import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { formatTick } from '../../../bin/report/tick-format.ts'

/** The labels of the ticks min, min + step, ..., max (as uPlot places them: multiples of step). */
const axis = (min: number, max: number, step: number, format = formatTick) => {
  const out: string[] = []
  for (let i = 0; min + i * step <= max + step / 1e6; i++) out.push(format(min + i * step, step))
  return out
}

describe('bin/report/tick-format', () => {
  it('formatTick - compact SI labels: k, M, G, T from the value, decimals from the step', () => {
    assert.equal(formatTick(0, 1000), '0')
    assert.equal(formatTick(999, 1), '999')
    assert.equal(formatTick(12_000, 1000), '12k')
    assert.equal(formatTick(1_200_000, 100_000), '1.2M')
    assert.equal(formatTick(1_250_000, 50_000), '1.25M')
    assert.equal(formatTick(950_000, 50_000), '950k')
    assert.equal(formatTick(-1500, 500), '-1.5k')
    assert.equal(formatTick(3e9, 1e9), '3G')
    assert.equal(formatTick(3e12, 1e12), '3T')
    assert.equal(formatTick(1e15, 1e14), '1000T')
    assert.equal(formatTick(0.25, 0.25), '0.25')
    assert.equal(formatTick(0.5, 0.25), '0.5')
    assert.equal(formatTick(0.001, 0.0005), '0.001')
  })

  it('formatTick - float noise and negative zero do not show', () => {
    assert.equal(formatTick(0.1 + 0.2, 0.1), '0.3')
    assert.equal(formatTick(3 * 0.35, 0.35), '1.05')
    assert.equal(formatTick(-1e-17, 0.1), '0')
    assert.equal(formatTick(-0, 1), '0')
  })

  it('formatTick - the ticks of an axis of large totals are distinct (the "0,000" labels of a 50 px axis)', () => {
    assert.deepEqual(axis(0, 1_000_000, 250_000), ['0', '250k', '500k', '750k', '1M'])
    assert.deepEqual(axis(1_200_000, 1_400_000, 50_000), ['1.2M', '1.25M', '1.3M', '1.35M', '1.4M'])
    assert.deepEqual(axis(900_000, 1_100_000, 50_000), ['900k', '950k', '1M', '1.05M', '1.1M'])
    assert.deepEqual(axis(2_000, 12_000, 2_500), ['2k', '4.5k', '7k', '9.5k', '12k'])
    assert.deepEqual(axis(0, 1, 0.25), ['0', '0.25', '0.5', '0.75', '1'])
    assert.deepEqual(axis(-0.002, 0.002, 0.001), ['-0.002', '-0.001', '0', '0.001', '0.002'])
    for (const [min, max, step] of [
      [1e6, 1.0002e6, 20],
      [123_400_000, 123_500_000, 25_000],
      [0, 5e9, 1e9],
      [7e12, 7.5e12, 1e11],
    ] as const) {
      const labels = axis(min, max, step)
      assert.equal(new Set(labels).size, labels.length, `distinct: ${labels.join(' ')}`)
    }
    assert.deepEqual(axis(1e6, 1.00004e6, 20), ['1M', '1.00002M', '1.00004M'])
  })

  it('formatTick - a value that is not finite is blank; without a usable step, 3 significant digits', () => {
    assert.equal(formatTick(Number.NaN, 1), '')
    assert.equal(formatTick(Number.POSITIVE_INFINITY, 1), '')
    assert.equal(formatTick(Number.NEGATIVE_INFINITY, 1), '')
    assert.equal(formatTick(123_456, Number.NaN), '123k')
    assert.equal(formatTick(123_456, 0), '123k')
    assert.equal(formatTick(1_234_567, -5), '1.23M')
    assert.equal(formatTick(0.000012345, Number.POSITIVE_INFINITY), '0.0000123')
  })

  it('formatTick - its source runs on its own, as the report page inlines it', () => {
    const inlined = new Function(`return (${formatTick.toString()})`)() as typeof formatTick
    assert.deepEqual(axis(1_200_000, 1_400_000, 50_000, inlined), axis(1_200_000, 1_400_000, 50_000))
    assert.equal(inlined(123_456, Number.NaN), '123k')
    assert.equal(inlined(Number.NaN, 1), '')
  })
})
