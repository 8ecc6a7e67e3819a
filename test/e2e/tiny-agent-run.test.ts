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
  checkHeldOut(dir, task, run.stdout)
}

/**
 * The final evaluation of an agent run (docs/gateway.md#held-out-evaluation): `eval/final-*.json`
 * holds the agent task's held-out instances 0..1 (k=2) for the initial checkpoint (no cold start:
 * `checkpoints/sft` holds the starting weights) and the final one, their rows, and their paired
 * difference, in the built-in tasks' vocabulary.
 */
function checkHeldOut(dir: string, task: string, stdout: string) {
  const finals = readdirSync(join(dir, 'eval')).filter((f) => /^final-\d+\.json$/.test(f))
  assert.equal(finals.length, 1, `one final eval file: ${readdirSync(join(dir, 'eval'))}`)
  const result = JSON.parse(readFileSync(join(dir, 'eval', finals[0]!), 'utf8')) as {
    k: number
    step: number
    instances: {
      checkpoint: string
      task: string
      difficulty: number
      index: number
      k: number
      successes: number
    }[]
    rows: { checkpoint: string; task: string; n: number; k: number; avg_at_k: number }[]
    paired: {
      a: string
      b: string
      task: string
      n: number
      avg_at_k_diff: number
      avg_at_k_diff_se: number
    }[]
  }
  assert.equal(result.k, 2)
  assert.deepEqual(
    result.instances.map((i) => [i.checkpoint, i.task, i.difficulty, i.index, i.k]),
    ['sft', `step-${result.step}`].flatMap((c) => [0, 1].map((i) => [c, task, 1, i, 2])),
  )
  assert.deepEqual(
    result.rows.map((r) => [r.checkpoint, r.task, r.n, r.k]),
    [
      ['sft', task, 2, 2],
      [`step-${result.step}`, task, 2, 2],
    ],
  )
  const avg = (c: string, i: number) => {
    const r = result.instances.find((x) => x.checkpoint === c && x.index === i)!
    return r.successes / r.k
  }
  const d = [0, 1].map((i) => avg(`step-${result.step}`, i) - avg('sft', i))
  assert.deepEqual(
    result.paired.map((p) => [p.a, p.b, p.task, p.n]),
    [
      ['sft', `step-${result.step}`, task, 2],
      ['sft', `step-${result.step}`, 'mean', 2],
    ],
  )
  assert.equal(result.paired[0]!.avg_at_k_diff, (d[0]! + d[1]!) / 2)
  assert.match(stdout, new RegExp(`step-${result.step} - sft ${task}: avg@2`))
}

describe('e2e - triad run of the tiny agent recipes', () => {
  it('e2e - recipes/tiny-agent.ts: the TypeScript agent on the openai package, 3 learner steps, its episodes in triad trajectories', async () => {
    await tinyAgentRun('recipes/tiny-agent.ts', 'calc-agent')
  })

  it('e2e - recipes/tiny-agent-py.ts: the Python agent on the standard library, rewarded by the task reward function, 3 learner steps', async () => {
    await tinyAgentRun('recipes/tiny-agent-py.ts', 'calc-agent-py')
  })
})
