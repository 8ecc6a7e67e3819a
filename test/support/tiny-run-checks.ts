import assert from 'node:assert/strict'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { readLatestCheckpoint } from '../../actors/index.ts'
import { readAckRecords } from '../../actors/testing.ts'
import { metricKeyInfo } from '../../protocols/index.ts'

/** One line of a run's `metrics.jsonl`. */
export interface MetricsJsonLine {
  role: string
  id: string
  step: number
  values: Record<string, number>
}

/**
 * What a finished `triad run recipes/tiny.ts` must have left in its run directory, however its roles
 * ran: every role reported (every key in the metric-key catalog), the step budget was reached, both kinds of engine served and reported
 * their throughput (shown by the live view), the SFT reported, the checkpoints, the ack audit trail, the evaluation table and the role logs exist.
 * It checks that every part took part, not learning. Returns the metrics lines.
 */
export function checkTinyRun(dir: string, stdout: readonly string[]): MetricsJsonLine[] {
  assert.ok(
    stdout.some((l) => /stopping \(3 steps done\)/.test(l)),
    stdout.join('\n'),
  )
  const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as MetricsJsonLine)
  const roles = new Set(lines.map((l) => l.role))
  // Every key the run reported is in the metric-key catalog (its meaning, unit, kind and panel).
  const reported = new Set(lines.flatMap((l) => Object.keys(l.values)))
  assert.deepEqual(
    [...reported].filter((k) => !metricKeyInfo(k)),
    [],
    'metric keys missing from protocols/metric-catalog.ts',
  )
  // The two roles of a run; the engines (whose reports are periodic) show in the turns they served.
  for (const role of ['learner', 'rollout'])
    assert.ok(roles.has(role), `no metrics from ${role} (got ${[...roles].join(', ')})`)
  const learner = lines.filter((l) => l.role === 'learner' && l.values['learner/version'] !== undefined)
  assert.equal(Math.max(...learner.map((l) => l.values['learner/version']!)), 3)
  const rollout = lines.filter((l) => l.role === 'rollout').at(-1)
  assert.ok((rollout?.values['rollout/episodes'] ?? 0) > 0, 'episodes ran through the environments')
  // tiny.ts sends half the turns to the stale engine (rho 0.5): both kinds of engine served.
  assert.ok((rollout?.values['rollout/turns_fresh'] ?? 0) > 0, 'a fresh engine served turns')
  assert.ok((rollout?.values['rollout/turns_stale'] ?? 0) > 0, 'a stale engine served turns')
  assert.ok(
    lines.some((l) => l.values['sft/loss'] !== undefined),
    'the cold-start SFT reported its loss',
  )
  // The SFT took at most the steps `triad run --check` gives as its bound (steps are packed by tokens).
  const stored = JSON.parse(readFileSync(join(dir, 'recipe.json'), 'utf8')) as {
    derived: { sftStepsAtMost: number }
  }
  const sftSteps = Math.max(...lines.map((l) => l.values['sft/steps_total'] ?? 0))
  assert.ok(
    sftSteps >= 1 && sftSteps <= stored.derived.sftStepsAtMost,
    `SFT steps ${sftSteps}, bound ${stored.derived.sftStepsAtMost}`,
  )
  // Each kind of engine reported its throughput: the RL phase of tiny.ts is shorter than their
  // report interval, so this is the report each engine makes when it stops.
  for (const role of ['policy', 'policy-stale'])
    assert.ok(
      lines.some((l) => l.role === role && (l.values['engine/tokens_per_s'] ?? 0) > 0),
      `no engine/tokens_per_s from ${role}`,
    )
  // ...and the live view's last snapshot shows a number in its tokens/s column.
  const header = stdout.findLastIndex((l) => /^│ tokens\/s │ staleness mean/.test(l))
  assert.match(stdout[header + 2] ?? '', /^│ \d+(\.\d)? +│/, stdout.slice(header).join('\n'))

  // Checkpoints, the ack audit trail, the evaluation table and the run log.
  const checkpoints = join(dir, 'checkpoints')
  assert.ok(existsSync(join(checkpoints, 'sft', 'model.safetensors')))
  assert.ok(existsSync(join(checkpoints, 'latest.json')))
  assert.ok(readAckRecords(checkpoints).some((r) => r.used.length > 0))
  // evaluation.every 2: step 2 is evaluated while the run goes on; the end evaluates SFT (as step
  // 0, in its own process) and step 3 at once.
  const evals = readdirSync(join(dir, 'eval')).sort()
  assert.equal(evals.length, 3, evals.join(', '))
  assert.match(evals[0]!, /^final-\d+\.json$/)
  assert.deepEqual(evals.slice(1), ['step-000000.json', 'step-000002.json'])
  const sft = JSON.parse(readFileSync(join(dir, 'eval', 'step-000000.json'), 'utf8')) as {
    step: number
    title: string
    seed: number
  }
  assert.equal(sft.step, 0)
  assert.equal(sft.title, 'held-out evaluation of the SFT checkpoint (step 0)')
  const periodic = JSON.parse(readFileSync(join(dir, 'eval', evals[2]!), 'utf8')) as {
    step: number
    rows: { task: string }[]
  }
  assert.equal(periodic.step, 2)
  assert.deepEqual(periodic.rows.map((r) => r.task).sort(), ['calc', 'maze'])
  const table = JSON.parse(readFileSync(join(dir, 'eval', evals[0]!), 'utf8')) as {
    rows: { checkpoint: string }[]
    seed: number
    instances: { checkpoint: string; task: string; index: number; k: number }[]
    paired: { a: string; b: string; task: string; n: number }[]
  }
  // Both checkpoints played the same instances with the same sampling seed, and the file pairs
  // them: step-3 minus sft per task and for the mean (evaluation.instancesPerTask 2, k 2).
  assert.equal(table.seed, sft.seed)
  const played = (c: string) =>
    table.instances
      .filter((r) => r.checkpoint === c)
      .map((r) => `${r.task}:${r.index}:${r.k}`)
      .sort()
  assert.deepEqual(played('sft'), ['calc:0:2', 'calc:1:2', 'maze:0:2', 'maze:1:2'])
  assert.deepEqual(played('step-3'), played('sft'))
  assert.deepEqual(
    table.paired.map((p) => [p.a, p.b, p.task, p.n]),
    [
      ['sft', 'step-3', 'calc', 2],
      ['sft', 'step-3', 'maze', 2],
      ['sft', 'step-3', 'mean', 2],
    ],
  )
  assert.ok(
    stdout.some((l) =>
      /^ {2}step-3 - sft mean: avg@2 [+-]\d\.\d{3} ± \d\.\d{3} \(paired over 2 instances/.test(l),
    ),
    stdout.join('\n'),
  )
  // The budget (3 steps) is off the checkpoint interval (2): the last step is checkpointed at the
  // end, and that is the one evaluated.
  assert.equal(readLatestCheckpoint(checkpoints)?.version, 3)
  assert.deepEqual([...new Set(table.rows.map((r) => r.checkpoint))].sort(), ['sft', 'step-3'])
  // checkpoints.keep 1: step-2 is gone; step-3 holds the reward model the learner trains.
  assert.deepEqual(
    readdirSync(checkpoints)
      .filter((f) => !f.includes('.'))
      .sort(),
    ['reward-sft', 'sft', 'step-3'],
  )
  assert.ok(existsSync(join(checkpoints, 'step-3', 'reward-model', 'model.safetensors')))
  // The reward model's cold start ran once and left its checkpoint for restarts and resumes.
  assert.ok(existsSync(join(checkpoints, 'reward-sft', 'reward-sft.json')))
  // The live view showed the cold-start SFT's progress before the RL view.
  assert.ok(
    stdout.some((l) =>
      /^run \S+ {2}cold-start SFT {2}\S+ +\d+% {2}step \d+\/\d+ {2}time (\d+s|1m \d\ds)\/1m 30s$/.test(l),
    ),
    stdout.join('\n'),
  )
  assert.ok(stdout.some((l) => /^cold-start SFT done: (\d+)\/\1 steps/.test(l)))
  assert.ok(existsSync(join(dir, 'logs', 'learner.log')) && existsSync(join(dir, 'logs', 'rollout.log')))
  assert.ok(!existsSync(join(dir, 'run.lock')), 'the run released its lock when it ended')
  return lines
}
