import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { InvalidArgumentError } from 'commander'
import { integerOption, numberOption } from '../../bin/numeric-option.ts'
import { runTriad } from '../support/triad-process.ts'

/** Asserts that `parse(value)` throws commander's InvalidArgumentError with exactly `message`. */
function rejects(parse: (v: string) => number, value: string, message: string) {
  assert.throws(
    () => parse(value),
    (err: Error) => err instanceof InvalidArgumentError && err.message === message,
    `'${value}'`,
  )
}

describe('bin/numeric-option', () => {
  it('integerOption - whole decimal numbers within the bounds', () => {
    const any = integerOption()
    assert.deepEqual(['0', '-3', '+12', ' 7 '].map(any), [0, -3, 12, 7])
    for (const bad of ['abc', '', ' ', '1.5', '1e3', '0x10', 'NaN', 'Infinity', '99999999999999999999'])
      rejects(any, bad, 'Expected an integer.')
    rejects(integerOption({ min: 1 }), '0', 'Expected an integer >= 1.')
    rejects(integerOption({ max: 5 }), '6', 'Expected an integer <= 5.')
    rejects(integerOption({ min: 0, max: 65535 }), '65536', 'Expected an integer in 0..65535.')
    assert.equal(integerOption({ min: 0, max: 65535 })('65535'), 65535)
  })

  it('numberOption - finite decimal numbers within the bounds', () => {
    const p = numberOption({ min: 0, max: 1 })
    assert.deepEqual(['0', '0.25', '1', '1e-3'].map(p), [0, 0.25, 1, 0.001])
    for (const bad of ['abc', '', 'NaN', 'Infinity', '1.5', '-0.1'])
      rejects(p, bad, 'Expected a number in [0, 1].')
    rejects(numberOption({ min: 0 }), '-1', 'Expected a number >= 0.')
    rejects(numberOption(), 'x', 'Expected a number.')
  })

  it('triad - a bad number is a commander error naming the option and the value, never a NaN later', async () => {
    const cases: [string[], string][] = [
      [
        ['env', 'try', 'calc', '--difficulty', 'abc'],
        "error: option '--difficulty <d>' argument 'abc' is invalid. Expected an integer.",
      ],
      [
        ['env', 'try', 'calc', '--seed', '-1'],
        "error: option '--seed <n>' argument '-1' is invalid. Expected an integer >= 0.",
      ],
      [
        ['env', 'try', 'calc', '--error-rate', '2'],
        "error: option '--error-rate <p>' argument '2' is invalid. Expected a number in [0, 1].",
      ],
      [
        ['eval', 'x', '--k', '0'],
        "error: option '--k <n>' argument '0' is invalid. Expected an integer >= 1.",
      ],
      [
        ['eval', 'x', '--temperature', 'hot'],
        "error: option '--temperature <t>' argument 'hot' is invalid. Expected a number >= 0.",
      ],
      [
        ['eval', 'x', '--step', '2.5'],
        "error: option '--step <n>' argument '2.5' is invalid. Expected an integer >= 0.",
      ],
      [
        ['monitor', '--run', 'r', '--wait', 'soon'],
        "error: option '--wait <ms>' argument 'soon' is invalid. Expected an integer >= 1.",
      ],
      [
        ['status', '--wait', '-5'],
        "error: option '--wait <ms>' argument '-5' is invalid. Expected an integer >= 1.",
      ],
      [
        ['demo', '--count', '0'],
        "error: option '--count <n>' argument '0' is invalid. Expected an integer >= 1.",
      ],
      [
        ['env', 'worker', '--capacity', 'lots'],
        "error: option '--capacity <n>' argument 'lots' is invalid. Expected an integer >= 1.",
      ],
      [
        ['sandbox', 'serve', '--port', '70000'],
        "error: option '--port <port>' argument '70000' is invalid. Expected an integer in 0..65535.",
      ],
      [
        ['bench', 'pipeline', '--seconds', 'x'],
        "error: option '--seconds <n>' argument 'x' is invalid. Expected an integer >= 1.",
      ],
    ]
    for (const [args, line] of cases) {
      const r = await runTriad(args)
      assert.equal(r.code, 2, args.join(' '))
      assert.equal(r.stderr.split('\n')[0], line)
      assert.doesNotMatch(r.stderr, /NaN/)
    }
  })
})
