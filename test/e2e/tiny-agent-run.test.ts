import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { RUN_STARTED, runTriad } from '../support/triad-process.ts'

/**
 * End to end: `triad run` of the tiny agent recipes (real processes: the run, its learner and
 * rollout roles, and the agent programs the rollout starts per episode), then `triad trajectories`
 * of the run, which shows the agents' episodes token for token.
 */
async function tinyAgentRun(recipe: string, task: string) {
  const runsDir = mkdtempSync(join(tmpdir(), 'triad-e2e-agent-'))
  const run = await runTriad(['run', recipe, '--runs-dir', runsDir])
  assert.equal(run.code, 0, run.stderr)
  const dir = run.stdout
    .split('\n')
    .map((l) => RUN_STARTED.exec(l))
    .find((m) => m)?.[2]
  assert.ok(dir, run.stdout)
  const rows = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as { role: string; step: number; values: Record<string, number> })
  const rollout = rows.filter((r) => r.role === 'rollout').at(-1)!.values
  assert.ok(rollout['rollout/groups']! >= 3, JSON.stringify(rollout))
  assert.ok(rollout['gateway/calls']! >= 6, 'every episode called the gateway')
  assert.equal(rollout['rollout/failed/agent_crashed'], undefined, 'no agent crashed')
  assert.ok(
    rows.some((r) => r.role === 'learner' && r.step === 3),
    'the learner reached its 3 steps',
  )
  const out = join(runsDir, 'episodes.jsonl')
  const exported = await runTriad(['trajectories', dir, '--out', out])
  assert.equal(exported.code, 0, exported.stderr)
  const episodes = readFileSync(out, 'utf8')
    .trim()
    .split('\n')
    .map(
      (l) =>
        JSON.parse(l) as { task: string; input_ids: number[]; messages: { role: string; content: string }[] },
    )
  assert.ok(episodes.length >= 6)
  for (const e of episodes) {
    assert.equal(e.task, task)
    assert.ok(e.input_ids.length > 0)
    assert.match(e.messages.find((m) => m.role === 'user')!.content, /How many/)
  }
  assert.ok(readdirSync(join(dir, 'checkpoints')).length > 0)
}

describe('e2e - triad run of the tiny agent recipes', () => {
  it('e2e - recipes/tiny-agent.ts: the TypeScript agent on the openai package, 3 learner steps, its episodes in triad trajectories', async () => {
    await tinyAgentRun('recipes/tiny-agent.ts', 'calc-agent')
  })

  it('e2e - recipes/tiny-agent-py.ts: the Python agent on the standard library, rewarded by the task reward function, 3 learner steps', async () => {
    await tinyAgentRun('recipes/tiny-agent-py.ts', 'calc-agent-py')
  })
})
