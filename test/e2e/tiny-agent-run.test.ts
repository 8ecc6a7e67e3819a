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
  return dir
}

/**
 * `triad eval` of an agent run: the run's agent task by name (its program against the latest
 * checkpoint, `--json` in the eval files' vocabulary); at a level it does not have, a usage error.
 */
async function evalAgentRun(dir: string, task: string) {
  const out = await runTriad(['eval', dir, '--k', '1', '--instances', '2', '--json'])
  assert.equal(out.code, 0, out.stderr)
  const result = JSON.parse(out.stdout) as {
    instances: { task: string; index: number }[]
    rows: { task: string; n: number }[]
  }
  assert.deepEqual(
    result.rows.map((r) => [r.task, r.n]),
    [[task, 2]],
  )
  assert.deepEqual(
    result.instances.map((i) => [i.task, i.index]),
    [
      [task, 0],
      [task, 1],
    ],
  )
  const bad = await runTriad(['eval', dir, '--tasks', `${task}:2`])
  assert.equal(bad.code, 2, bad.stderr)
  assert.match(bad.stderr, new RegExp(`'${task}' is an agent or MCP task of the run: it has the one level 1`))
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
  it('e2e - recipes/tiny-agent.ts: the TypeScript agent on the openai package, 3 learner steps, its episodes in triad trajectories, its held-out evaluation; triad eval of the run plays the agent task', async () => {
    const dir = await tinyAgentRun('recipes/tiny-agent.ts', 'calc-agent')
    await evalAgentRun(dir, 'calc-agent')
  })

  it('e2e - recipes/tiny-agent-py.ts: the Python agent on the standard library, rewarded by the task reward function, 3 learner steps, its periodic evaluation of step 2 in a triad eval process', async () => {
    const dir = await tinyAgentRun('recipes/tiny-agent-py.ts', 'calc-agent-py')
    // evaluation.every 2: the checkpoint of step 2 evaluated in the background, the agent's own program against it.
    const periodic = JSON.parse(readFileSync(join(dir, 'eval', 'step-000002.json'), 'utf8')) as {
      step: number
      instances: { task: string; index: number; k: number }[]
    }
    assert.equal(periodic.step, 2)
    assert.deepEqual(
      periodic.instances.map((i) => [i.task, i.index, i.k]),
      [
        ['calc-agent-py', 0, 2],
        ['calc-agent-py', 1, 2],
      ],
    )
  })
})
