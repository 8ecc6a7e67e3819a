import assert from 'node:assert/strict'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import type { NodeConfig, RunDir } from '../../actors/index.ts'
import { CliError, UsageError } from '../../bin/errors.ts'
import { readNodeConfig } from '../../bin/worker/node-config-file.ts'
import { builtinTaskCatalog, defineRecipe, nodeConfigOf, resolveTasks } from '../../recipes/index.ts'

const tmp = mkdtempSync(join(tmpdir(), 'triad-node-config-'))
after(() => rmSync(tmp, { recursive: true, force: true }))

/** What `triad run` writes for a recipe with SFT datasets, an agent task and every triad part on. */
function writtenConfig(): NodeConfig {
  const recipe = resolveTasks(
    defineRecipe({
      tasks: [{ name: 'calc' }, { name: 'shell-agent', agent: 'agent.py', instances: 4 }],
      model: { contextLength: 256, threads: { learner: 2 } },
      sft: { datasets: [{ path: 'data.jsonl' }], steps: 3 },
      rl: { offPolicy: { name: 'tis' } },
    }),
    builtinTaskCatalog(),
  )
  return nodeConfigOf(recipe, { id: 'r1', path: '/runs/r1' } as RunDir, 10)
}

/** `value` written as JSON to a fresh file; its path. */
function file(name: string, value: unknown): string {
  const path = join(tmp, name)
  writeFileSync(path, JSON.stringify(value))
  return path
}

/** The message `readNodeConfig` throws for `config`, which must be a `CliError`. */
function refusal(config: string): string {
  try {
    readNodeConfig({ config })
  } catch (err) {
    assert.ok(err instanceof CliError, String(err))
    return err.message
  }
  assert.fail(`${config} was read as a node config`)
}

describe('bin/worker - node-config.json', () => {
  it('reads back what triad run writes', () => {
    const written = writtenConfig()
    const read = readNodeConfig({ config: file('good.json', written) })
    assert.deepEqual(read, JSON.parse(JSON.stringify(written)))
  })

  it('a field of the wrong type is refused, naming the file and the field', () => {
    // a JSON copy, to be spoiled: what a hand-edited node-config.json may hold
    const c: { rl: Record<string, unknown> } = JSON.parse(JSON.stringify(writtenConfig()))
    c.rl.lr = 'fast'
    const path = file('wrong-type.json', c)
    const message = refusal(path)
    assert.match(
      message,
      new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} is not a triad node config`),
    )
    assert.match(message, /rl\.lr: .*number/)
  })

  it('a missing field is refused, naming the file and the field (nested and in a list)', () => {
    const c: { pipeline: Record<string, unknown>; tasks: Record<string, unknown>[] } = JSON.parse(
      JSON.stringify(writtenConfig()),
    )
    delete c.pipeline.maxTurns
    delete c.tasks[1]!.weight
    const path = file('missing.json', c)
    const message = refusal(path)
    assert.ok(message.includes(path), message)
    assert.match(message, /pipeline\.maxTurns: missing \(number\)/)
    assert.match(message, /tasks\[1\]\.weight: missing/)
  })

  it('an unknown field is refused, naming it', () => {
    const path = file('unknown.json', { ...writtenConfig(), maxStep: 3 })
    assert.match(refusal(path), /maxStep/)
  })

  it('a file that is no JSON, or no object, is refused; no --config is a usage error', () => {
    const bad = join(tmp, 'bad.json')
    writeFileSync(bad, '{"run": ')
    assert.match(refusal(bad), /cannot read the node config/)
    assert.match(refusal(file('list.json', [1])), /\(root\): /)
    assert.throws(() => readNodeConfig({}), UsageError)
  })
})
