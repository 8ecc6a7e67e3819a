import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { BAD_INPUT_ERRORS, CliError, ExitCode, exitCodeOf, oneLine, UsageError } from '../../bin/errors.ts'
import { runTriad } from '../support/triad-process.ts'

const root = mkdtempSync(join(tmpdir(), 'triad-exit-'))
/** A recipe file that loads and that the schema refuses. */
const refused = join(root, 'refused.ts')
writeFileSync(
  refused,
  "export default { name: 'bad', tasks: [{ name: 'calc' }], budget: { maxSteps: -3 }, seed: 'x' }\n",
)
const missing = join(root, 'no-such-recipe.ts')
const nowhere = join(root, 'nowhere')

/**
 * One bad argument for every command (and the recipe faults for each command that takes a
 * recipe), with the start of the one line it must print. Every one is a usage error: exit 2.
 */
const CASES: { args: string[]; message: RegExp }[] = [
  { args: ['run', missing], message: /^triad: cannot load recipe .*no-such-recipe\.ts: no such file$/ },
  {
    args: ['run', refused],
    message:
      /^triad: invalid recipe .*refused\.ts: seed: expected number, got string; budget\.maxSteps: must be >= 1$/,
  },
  { args: ['run', refused, '--check'], message: /^triad: invalid recipe .*refused\.ts: / },
  {
    args: ['run', 'recipes/quickstart.ts', '--nats', 'nats://h:1', '--in-process'],
    message: /exclude each other/,
  },
  { args: ['ablate', missing, '--vary', 'seed=1,2', '--seeds', '1'], message: /^triad: cannot load recipe / },
  { args: ['ablate', refused, '--vary', 'seed=1,2', '--seeds', '1'], message: /^triad: invalid recipe / },
  {
    args: ['ablate', 'recipes/quickstart.ts', '--seeds', 'two'],
    message: /^error: option '--seeds <n>' argument 'two' is invalid/,
  },
  { args: ['monitor'], message: /^error: required option '--run <run>' not specified$/ },
  { args: ['monitor', '--run', 'a.b'], message: /^triad: invalid run id 'a\.b'/ },
  { args: ['status', '--wait', '0'], message: /^error: option '--wait <ms>' argument '0' is invalid/ },
  {
    args: ['status', '--run', 'none-20261204-000000', '--runs-dir', root],
    message: /^triad: cannot find the NATS server of run none-20261204-000000: there is no run directory /,
  },
  {
    args: ['report', nowhere],
    message: /^triad: .*nowhere is not a triad run directory \(it does not exist\)$/,
  },
  { args: ['metrics', nowhere], message: /^triad: .*nowhere is not a triad run directory/ },
  {
    args: ['trajectories', nowhere, '--out', join(root, 't.jsonl')],
    message: /^triad: .*nowhere is not a triad run directory/,
  },
  { args: ['collect', '--tasks', 'calc'], message: /^triad: --policy openai:URL is required/ },
  { args: ['eval', nowhere], message: /^triad: .*nowhere is neither a checkpoint/ },
  { args: ['eval', '--k', 'abc'], message: /^error: option '--k <n>' argument 'abc' is invalid/ },
  { args: ['generate', nowhere, '--prompt', 'hi'], message: /^triad: .*nowhere: no such directory/ },
  { args: ['serve', nowhere], message: /^triad: .*nowhere is neither a model directory/ },
  {
    args: ['export', root, '--hf', join(root, 'hf'), '--dtype', 'f64'],
    message: /^triad: --dtype f64: expected one of /,
  },
  { args: ['model', 'tiny'], message: /^error: missing required argument 'out'$/ },
  {
    args: ['worker', '--role', 'bogus', '--nats', 'nats://127.0.0.1:1'],
    message: /^triad: unknown role 'bogus'/,
  },
  { args: ['env', 'try', 'nosuchtask'], message: /^triad: unknown task 'nosuchtask'; valid tasks: / },
  {
    args: ['env', 'try', join(root, 'missing-task.ts')],
    message: /^triad: cannot load task file .*: no such file$/,
  },
  { args: ['sandbox', 'serve', '--backend', 'bogus'], message: /^triad: unknown backend 'bogus'/ },
  { args: ['bench', 'nosuch'], message: /^triad: unknown benchmark 'nosuch'/ },
  { args: ['demo', '--bogus'], message: /^error: unknown option '--bogus'$/ },
  { args: ['nosuchcommand'], message: /^error: unknown command 'nosuchcommand'$/ },
]

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T, R>(items: readonly T[], limit: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length)
  let next = 0
  await Promise.all(
    Array.from({ length: limit }, async () => {
      while (next < items.length) {
        const i = next++
        out[i] = await fn(items[i]!)
      }
    }),
  )
  return out
}

describe('bin/exit-codes', () => {
  it('every command - a bad argument, a missing recipe file and a recipe the schema refuses exit 2 with one line (and, from the option parser, the --help hint)', async () => {
    const results = await pool(CASES, 3, async (c) => ({ c, r: await runTriad(c.args) }))
    const wrong: string[] = []
    for (const { c, r } of results) {
      const lines = r.stderr.replace(/\n$/, '').split('\n')
      const command =
        c.args[0] === 'nosuchcommand'
          ? 'triad'
          : `triad ${c.args.slice(0, c.args[0] === 'env' || c.args[0] === 'sandbox' || c.args[0] === 'model' ? 2 : 1).join(' ')}`
      const hint = lines.length === 2 && lines[1] === `see \`${command} --help\``
      if (r.code !== ExitCode.usage) wrong.push(`${c.args.join(' ')}: exit ${r.code}: ${r.stderr}`)
      else if (!c.message.test(lines[0]!))
        wrong.push(`${c.args.join(' ')}: ${JSON.stringify(lines[0])} does not match ${c.message}`)
      else if (lines.length > 1 && !hint)
        wrong.push(`${c.args.join(' ')}: not one line: ${JSON.stringify(r.stderr)}`)
      else if (r.stdout !== '') wrong.push(`${c.args.join(' ')}: printed ${JSON.stringify(r.stdout)}`)
    }
    assert.deepEqual(wrong, [])
  })

  it('every command - each command of triad --help has a case above', async () => {
    const help = await runTriad(['--help'])
    const commands = [...help.stdout.split('Commands:')[1]!.matchAll(/^ {2}([a-z-]+)/gm)].map((m) => m[1]!)
    const covered = new Set(CASES.map((c) => c.args[0]))
    assert.deepEqual(
      commands.filter((c) => c !== 'help' && !covered.has(c)),
      [],
    )
  })

  it('exitCodeOf - bad input from a lower layer, found in the cause chain, is a usage error; other failures keep their status; oneLine joins a listing', () => {
    const named = (name: string) => Object.assign(new Error('x'), { name })
    for (const name of BAD_INPUT_ERRORS)
      assert.equal(
        exitCodeOf(new CliError('m', { cause: new Error('wrapped', { cause: named(name) }) })),
        2,
        name,
      )
    assert.equal(exitCodeOf(new CliError('m', { cause: named('NatsConnectError') })), 1)
    assert.equal(exitCodeOf(new CliError('m', { exitCode: 3, cause: named('RecipeError') })), 3)
    assert.equal(exitCodeOf(new UsageError('m')), 2)
    assert.equal(
      oneLine(
        'invalid recipe r.ts:\nbudget.maxSteps: must be >= 1\n  seed: expected a number\n\ngive --tasks',
      ),
      'invalid recipe r.ts: budget.maxSteps: must be >= 1; seed: expected a number; give --tasks',
    )
    assert.equal(oneLine('one line'), 'one line')
  })

  it('BAD_INPUT_ERRORS - every name is the name of an error class of the layers below', async () => {
    // The folders that throw them: each name is matched as a string in bin/errors.ts.
    const modules = await Promise.all([
      import('../../recipes/index.ts'),
      import('../../actors/index.ts'),
      import('../../actors/environment/index.ts'),
      import('../../bin/run/index.ts'),
      import('../../bin/ablation/index.ts'),
    ])
    const classes = Object.assign({}, ...modules) as Record<string, unknown>
    for (const name of BAD_INPUT_ERRORS) {
      const cls = classes[name] as (new (...args: never[]) => Error) | undefined
      assert.equal(typeof cls, 'function', `${name} is exported`)
      assert.equal(cls!.name, name)
      assert.ok(cls!.prototype instanceof Error, `${name} is an Error`)
    }
  })
})
