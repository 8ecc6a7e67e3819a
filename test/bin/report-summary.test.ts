import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  appendRunLog,
  createRunDir,
  type EvalInstance,
  type EvalResult,
  EvalResultSchema,
  pairedDifference,
  type RunDir,
  writeEvalResult,
} from '../../actors/index.ts'
import { formatMetricsLine } from '../../actors/testing.ts'
import { buildReport } from '../../bin/commands/report.ts'
import { chromiumMissing, dumpDom } from '../support/headless-chromium.ts'
import { SYNTHETIC_TASKS, syntheticMetrics } from '../support/synthetic-run.ts'
import { runTriad } from '../support/triad-process.ts'

const K = 4
const N = 8
const T0 = Date.UTC(2026, 11, 4, 12)

/**
 * Every instance's result of a checkpoint: instance i of task t succeeds `f(t, i)` of K times,
 * as the held-out evaluation writes them.
 */
function instancesOf(checkpoint: string, f: (t: number, i: number) => number): EvalInstance[] {
  return SYNTHETIC_TASKS.flatMap((task, t) =>
    Array.from({ length: N }, (_, index) => ({
      checkpoint,
      task,
      difficulty: 1,
      index,
      k: K,
      successes: f(t, index),
    })),
  )
}

/** The rows of one checkpoint from its instances: avg@k and its standard error over instances. */
function rowsOf(checkpoint: string, instances: EvalInstance[]): Record<string, string | number>[] {
  return SYNTHETIC_TASKS.map((task) => {
    const avg = instances.filter((i) => i.task === task).map((i) => i.successes / i.k)
    const mean = avg.reduce((a, v) => a + v, 0) / avg.length
    const sd = Math.sqrt(avg.reduce((a, v) => a + (v - mean) ** 2, 0) / (avg.length - 1))
    return {
      checkpoint,
      task,
      difficulty: 1,
      n: N,
      k: K,
      avg_at_k: mean,
      avg_at_k_se: sd / Math.sqrt(avg.length),
      pass_at_k: 1,
      pass_at_k_se: 0,
    }
  })
}

/**
 * A finished run directory written by the project's own writers, as `triad run` leaves it: its
 * recipe, `logs/run.jsonl` (start with the commit and machine, a process restart, stop), 30 steps
 * of metrics, periodic evaluations at steps 10 and 20 and the end-of-run file at step 30 with the
 * SFT and final rows, every instance's result and the paired difference (`pairedDifference`).
 * `gain` moves the final checkpoint's successes up.
 */
async function finishedRun(
  runsDir: string,
  name: string,
  gain: number,
): Promise<{ dir: RunDir; final: EvalResult }> {
  const dir = await createRunDir({
    runsDir,
    name,
    recipe: {
      name,
      model: { width: 64, layers: 2, heads: 4 },
      tasks: SYNTHETIC_TASKS.map((t) => ({ name: t })),
    },
  })
  await appendRunLog(dir, 'run', {
    event: 'start',
    time: T0,
    recipe: `${name}.ts`,
    code: '0123456789abcdef0123456789abcdef01234567',
    machine: '16 x Test CPU, 128 GiB, Node v20',
  })
  appendFileSync(dir.metricsFile, `${syntheticMetrics(30, T0).map(formatMetricsLine).join('\n')}\n`)
  const sft = instancesOf('sft', (t, i) => (i + t) % (K + 1))
  const final = instancesOf('step-30', (t, i) => Math.min(K, ((i + t) % (K + 1)) + gain * ((i % 2) + 1)))
  for (const step of [10, 20])
    await writeEvalResult(dir, `step-${String(step).padStart(6, '0')}`, {
      title: `held-out evaluation at step ${step}`,
      step,
      k: K,
      rows: rowsOf('x', sft).map(({ checkpoint: _, ...r }) => ({
        ...r,
        avg_at_k: Number(r.avg_at_k) + step / 100,
      })),
    })
  const strip = (xs: EvalInstance[]) => xs.map(({ checkpoint: _, ...i }) => i)
  const paired = pairedDifference(strip(sft), strip(final)).map((d) => ({ a: 'sft', b: 'step-30', ...d }))
  const file = await writeEvalResult(dir, `final-${T0 + 1_800_000}`, {
    title: 'held-out evaluation: SFT checkpoint vs final RL checkpoint',
    step: 30,
    k: K,
    time: T0 + 1_800_000,
    seed: 4242,
    instances: [...sft, ...final],
    paired,
    rows: [...rowsOf('sft', sft), ...rowsOf('step-30', final)],
  })
  await appendRunLog(dir, 'run', {
    event: 'stop',
    time: T0 + 1_860_000,
    reason: 'steps',
    steps: 30,
    restarts: { learner: 0, rollout: 1 },
    metricsLines: 120,
    evalFile: file,
  })
  return { dir, final: EvalResultSchema.parse(JSON.parse(readFileSync(file, 'utf8'))) }
}

/** The text of the held-out table's cells of one run on the page: `task/col` -> text. */
function cellsOf(dom: string, run: string): Map<string, string> {
  const start = dom.indexOf(`class="summary-run" data-run="${run}"`)
  assert.ok(start >= 0, `the summary of ${run} is on the page`)
  const end = dom.indexOf('class="summary-run"', start + 1)
  const part = dom.slice(start, end < 0 ? undefined : end)
  const out = new Map<string, string>()
  for (const m of part.matchAll(/data-task="([^"]+)" data-col="([^"]+)">([^<]*)</g))
    out.set(`${m[1]}/${m[2]}`, m[3]!.trim())
  return out
}

/** What the page must show for one run, computed from its eval file alone. */
function expectedCells(final: EvalResult): Map<string, string> {
  const f = (m: number, se: number, signed = false) =>
    `${signed && m >= 0 ? '+' : ''}${m.toFixed(3)} ± ${se.toFixed(3)}`
  const out = new Map<string, string>()
  const byCheckpoint = (c: string) => final.rows.filter((r) => r.checkpoint === c)
  for (const [col, c] of [
    ['sft', 'sft'],
    ['final', 'step-30'],
  ] as const) {
    const rows = byCheckpoint(c)
    for (const r of rows) out.set(`${r.task}/${col}`, f(Number(r.avg_at_k), Number(r.avg_at_k_se)))
    const mean = rows.reduce((a, r) => a + Number(r.avg_at_k), 0) / rows.length
    const se = Math.sqrt(rows.reduce((a, r) => a + Number(r.avg_at_k_se) ** 2, 0)) / rows.length
    out.set(`mean/${col}`, f(mean, se))
  }
  for (const p of final.paired!) out.set(`${p.task}/diff`, f(p.avg_at_k_diff, p.avg_at_k_diff_se, true))
  return out
}

const attr = (dom: string, name: string) => new RegExp(`<body[^>]*\\s${name}="([^"]*)"`).exec(dom)?.[1]

describe('bin/report - the summary', () => {
  it("triad report - the page opens with the run's facts and its held-out table (SFT, final, paired difference per task and mean), read back from headless Chromium equal to the eval file; headline charts next; whole-step x ticks on one x range", async (t) => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-summary-'))
    const { dir, final } = await finishedRun(runsDir, 'sumry', 1)
    const r = await runTriad(['report', dir.path])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, `written ${join(dir.path, 'report.html')}`)
    const html = readFileSync(join(dir.path, 'report.html'), 'utf8')
    // The summary comes first, then the headline charts, then the panels.
    const at = (id: string) => html.indexOf(`id="${id}"`)
    assert.ok(at('summary') > 0 && at('summary') < at('headline') && at('headline') < at('training'))
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const dom = await dumpDom(join(dir.path, 'report.html'), 60_000, [1280, 900])
    assert.equal(attr(dom, 'data-charts-drawn'), attr(dom, 'data-charts-total'))
    const cells = cellsOf(dom, dir.id)
    assert.deepEqual(Object.fromEntries(cells), Object.fromEntries(expectedCells(final)))
    assert.equal(cells.size, 4 * 3, '3 tasks and the mean, 3 columns')
    const fact = (k: string) => new RegExp(`data-fact="${k}">([^<]*)<`).exec(dom)?.[1]
    assert.deepEqual(
      ['recipe', 'model', 'commit', 'machine', 'wall time', 'steps', 'restarts', 'resumes', 'ended'].map(
        fact,
      ),
      [
        'sumry',
        'triad transformer, width 64, 2 layers, 4 heads',
        '0123456789ab',
        '16 x Test CPU, 128 GiB, Node v20',
        '31.0 min',
        '30',
        '1 (rollout 1)',
        '0',
        'steps',
      ],
    )
    // Headline charts: held-out avg@k, training success, throughput, in that order.
    const headline = dom.slice(dom.indexOf('id="headline"'), dom.indexOf('id="evaluation"'))
    assert.deepEqual(
      [...headline.matchAll(/<figcaption[^>]*>([^<]+)</g)].map((m) => m[1]),
      ['eval/avg@4', 'rollout/success', 'engine/tokens_per_s'],
    )
    // Every chart on the learner's steps: whole-number x ticks, within the run's one range 0..30.
    const xTicks = [...dom.matchAll(/data-x="step"[^>]*data-x-ticks="([^"]*)"/g)].map((m) => m[1]!.split(' '))
    assert.ok(xTicks.length >= 8, `${xTicks.length} charts on the learner's steps`)
    for (const ticks of xTicks)
      for (const tick of ticks) {
        assert.match(tick, /^\d+$/, `x tick ${tick} is a whole step`)
        assert.ok(Number(tick) >= 0 && Number(tick) <= 30)
      }
    // Stable colours: a task has the colour of the legend in the summary table too.
    const legendColour = /data-task="sql" data-colour="(#[0-9a-f]{6})"/.exec(dom)?.[1]
    assert.ok(legendColour)
    assert.match(dom, new RegExp(`<span style="color:\\s*${legendColour}[^"]*">■</span> sql`))
  })

  it('triad report - compared runs: the same summary side by side, each with its own paired differences', async (t) => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-summary-'))
    const a = await finishedRun(runsDir, 'base', 0)
    const b = await finishedRun(runsDir, 'better', 1)
    const out = join(runsDir, 'both.html')
    const r = await runTriad(['report', a.dir.path, b.dir.path, '--out', out])
    assert.equal(r.code, 0, r.stderr)
    assert.equal(r.stdout, `written ${out}`)
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const dom = await dumpDom(out, 60_000, [1600, 900])
    for (const run of [a, b])
      assert.deepEqual(
        Object.fromEntries(cellsOf(dom, run.dir.id)),
        Object.fromEntries(expectedCells(run.final)),
      )
    // base's final checkpoint is its SFT one again: a paired difference of exactly 0.
    assert.equal(cellsOf(dom, a.dir.id).get('mean/diff'), '+0.000 ± 0.000')
    assert.notEqual(cellsOf(dom, b.dir.id).get('mean/diff'), '+0.000 ± 0.000')
    assert.ok(dom.indexOf(`data-run="${a.dir.id}"`) < dom.indexOf(`data-run="${b.dir.id}"`))
  })

  it('buildReport - a run without an end-of-run evaluation says so in its summary; facts it never recorded say so', async () => {
    const runsDir = mkdtempSync(join(tmpdir(), 'triad-summary-'))
    const dir = await createRunDir({
      runsDir,
      name: 'young',
      recipe: { name: 'young', tasks: [{ name: 'calc' }] },
    })
    appendFileSync(dir.metricsFile, `${syntheticMetrics(3, T0).map(formatMetricsLine).join('\n')}\n`)
    const report = await buildReport(dir.path)
    assert.match(report.html, /no end-of-run evaluation yet \(eval\/final-\*\.json\)/)
    assert.match(report.html, /data-fact="commit">not recorded</)
    assert.match(report.html, /data-fact="steps">2</)
  })
})
