import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { type EvalResult, writeEvalResult } from '../../actors/index.ts'
import { formatMetricsLine } from '../../actors/testing.ts'
import { buildReport } from '../../bin/commands/report.ts'
import { buildChartSections, latestPerTask, placeKeys, taskNames } from '../../bin/report/chart-groups.ts'
import { evalCharts } from '../../bin/report/eval-charts.ts'
import { chromiumMissing, dumpDom, screenshot } from '../support/headless-chromium.ts'
import {
  makeSyntheticRun,
  SYNTHETIC_TASK_FAMILIES,
  syntheticResumedRollout,
  syntheticSftMetrics,
} from '../support/synthetic-run.ts'
import { startTriad } from '../support/triad-process.ts'

const tmp = () => mkdtempSync(join(tmpdir(), 'triad-report-'))

/** A synthetic run evaluated at steps 10, 20 and 30 with standard errors. */
async function evaluatedRun(runsDir: string, name = 'synthetic') {
  const dir = await makeSyntheticRun(runsDir, 30, name)
  for (const step of [10, 20])
    await writeEvalResult(dir, `step-${String(step).padStart(6, '0')}`, {
      step,
      k: 8,
      rows: ['calc', 'sql', 'maze'].map((task) => ({
        task,
        difficulty: 1,
        n: 32,
        k: 8,
        avg_at_k: step / 100,
        avg_at_k_se: 0.04,
        pass_at_k: step / 50,
        pass_at_k_se: 0.05,
      })),
    })
  return dir
}
const attr = (dom: string, name: string) => new RegExp(`<body[^>]*\\b${name}="(\\d+)"`).exec(dom)?.[1]

describe('bin/report', () => {
  it('placeKeys - groups keys by prefix: per-task series, shared stems, single keys', () => {
    const placed = placeKeys(
      [
        'rollout/success',
        'rollout/success/calc',
        'rollout/success/sql',
        'learner/policy/clip_frac_high',
        'learner/policy/clip_frac_low',
        'learner/policy/dual_clip_frac',
        'learner/loss/total',
        'learner/reward/mean',
        'learner/reward/mean/calc',
        'env/difficulty/calc',
        'env/difficulty/calc/level_1',
        'env/difficulty/calc/level_2',
        'engine/tokens_per_s',
        'uptime',
      ],
      new Set(['calc', 'sql']),
    )
    assert.deepEqual(Object.fromEntries(placed), {
      'rollout/success': { area: 'rollout', chart: 'rollout/success', label: 'all' },
      'rollout/success/calc': { area: 'rollout', chart: 'rollout/success', label: 'calc' },
      'rollout/success/sql': { area: 'rollout', chart: 'rollout/success', label: 'sql' },
      'learner/policy/clip_frac_high': {
        area: 'learner',
        chart: 'learner/policy/clip_frac_*',
        label: 'high',
      },
      'learner/policy/clip_frac_low': { area: 'learner', chart: 'learner/policy/clip_frac_*', label: 'low' },
      'learner/policy/dual_clip_frac': {
        area: 'learner',
        chart: 'learner/policy/dual_clip_frac',
        label: 'dual_clip_frac',
      },
      'learner/loss/total': { area: 'learner', chart: 'learner/loss/total', label: 'total' },
      'learner/reward/mean': { area: 'learner', chart: 'learner/reward/mean', label: 'all' },
      'learner/reward/mean/calc': { area: 'learner', chart: 'learner/reward/mean', label: 'calc' },
      'env/difficulty/calc': { area: 'env', chart: 'env/difficulty', label: 'calc' },
      'env/difficulty/calc/level_1': { area: 'env', chart: 'env/difficulty/calc/level_*', label: '1' },
      'env/difficulty/calc/level_2': { area: 'env', chart: 'env/difficulty/calc/level_*', label: '2' },
      'engine/tokens_per_s': { area: 'engine', chart: 'engine/tokens_per_s', label: 'tokens_per_s' },
      uptime: { area: 'other', chart: 'uptime', label: 'uptime' },
    })
  })

  it('taskNames - takes the recipe tasks and every rollout/success/<task>', () => {
    const line = {
      role: 'rollout',
      id: '0',
      step: 0,
      time: 0,
      values: { 'rollout/success/maze': 1, 'rollout/success': 1 },
    }
    assert.deepEqual([...taskNames([line], ['calc'])].sort(), ['calc', 'maze'])
  })

  it('buildChartSections - averages an actor over a step, sums rates over actors, averages the rest', () => {
    const line = (id: string, step: number, values: Record<string, number>) => ({
      role: 'policy',
      id,
      step,
      time: 0,
      values,
    })
    const sections = buildChartSections([
      line('0', 1, { 'engine/tokens_per_s': 100, 'engine/busy': 0.5 }),
      line('0', 1, { 'engine/tokens_per_s': 300, 'engine/busy': 1 }),
      line('1', 1, { 'engine/tokens_per_s': 50, 'engine/busy': 0 }),
      line('1', 3, { 'engine/tokens_per_s': 70 }),
    ])
    assert.deepEqual(sections, [
      {
        area: 'engine',
        charts: [
          { title: 'engine/busy', x: [1], series: [{ label: 'busy', key: 'engine/busy', y: [0.375] }] },
          {
            title: 'engine/tokens_per_s',
            x: [1, 3],
            series: [{ label: 'tokens_per_s', key: 'engine/tokens_per_s', y: [250, 70] }],
          },
        ],
      },
    ])
  })

  it('buildChartSections - counters are continuous over a resume and summed over actors; episode counts are integers', () => {
    const line = (
      id: string,
      step: number,
      episodes: number,
      tokens: number,
      calc: number,
      success: number,
    ) => ({
      role: 'rollout',
      id,
      step,
      time: 0,
      values: {
        'rollout/episodes': episodes, // total since the process started
        'rollout/generated_tokens': tokens, // total since the process started
        'rollout/episodes/calc': calc, // since the previous report
        'rollout/success/calc': success,
      },
    })
    const lines = [
      line('rollout', 0, 4, 1000, 4, 0.5),
      line('rollout', 0, 6, 1500, 2, 0.25), // two reports at one step: no mean of totals (5)
      line('rollout', 1, 10, 2600, 4, 1),
      line('rollout', 2, 13, 3300, 3, 1),
      // resumed from the checkpoint of step 1: the rollout counts from 0 again
      line('rollout', 1, 3, 700, 3, 0),
      line('rollout', 2, 8, 2000, 5, 0.5),
      line('rollout-2', 2, 2, 500, 2, 1), // a second rollout node: its totals add up
      line('rollout', 3, 12, 2900, 4, 0.5),
      line('rollout-2', 3, 5, 1200, 3, 1),
    ]
    const sections = buildChartSections(lines)
    assert.deepEqual(
      sections.map((s) => [s.area, s.charts.map((c) => [c.title, c.x, c.series.map((r) => [r.label, r.y])])]),
      [
        [
          'rollout',
          [
            [
              'rollout/episodes',
              [0, 1, 2, 3],
              [
                ['all', [6, 16, 23, 30]],
                ['calc', [6, 16, 23, 30]],
              ],
            ],
            ['rollout/generated_tokens', [0, 1, 2, 3], [['generated_tokens', [1500, 4000, 5800, 7400]]]],
            // a gauge: the reports of an actor at a step averaged, then the actors averaged
            ['rollout/success', [0, 1, 2, 3], [['calc', [0.375, 0.5, 0.875, 0.75]]]],
          ],
        ],
      ],
    )
    for (const s of sections[0]!.charts.filter((c) => c.title !== 'rollout/success'))
      for (const r of s.series)
        assert.ok(
          r.y.every((v) => Number.isInteger(v)),
          `${r.key} integer`,
        )
    assert.deepEqual(latestPerTask(sections, new Set(['calc'])), {
      columns: ['rollout/episodes', 'rollout/success'],
      rows: [{ task: 'calc', values: [30, 0.75] }],
    })
  })

  it('buildReport - a resumed run: continuous totals, compact distinct y ticks, a latest table that fits the page', async (t) => {
    const dir = await makeSyntheticRun(tmp(), 5)
    appendFileSync(dir.metricsFile, `${syntheticResumedRollout().map(formatMetricsLine).join('\n')}\n`)
    const report = await buildReport(dir.path)
    assert.match(report.html, /<b>counters continued across restarts<\/b> rollout:rollout at step 20</)
    // 45 reports of 60,000 tokens and 24 episodes (8 per task): steps 20 to 24 were reported twice
    const data = JSON.parse(
      /<script type="application\/json" id="triad-data">(.*?)<\/script>/s.exec(report.html)![1]!,
    )
    const chart = (title: string) =>
      data.sections
        .flatMap((s: { charts: unknown[] }) => s.charts)
        .find((c: { title: string }) => c.title === title)
    const tokens = chart('rollout/generated_tokens')
    assert.deepEqual(tokens.x.slice(-3), [37, 38, 39])
    assert.deepEqual(tokens.series[0].y.slice(-3), [2_580_000, 2_640_000, 2_700_000])
    assert.deepEqual(
      tokens.series[0].y.slice(19, 26),
      [1_200_000, 1_560_000, 1_620_000, 1_680_000, 1_740_000, 1_800_000, 1_860_000],
    )
    const episodes = chart('rollout/episodes')
    assert.deepEqual(
      episodes.series.map((s: { label: string; y: number[] }) => [s.label, s.y.at(-1)]),
      [
        ['all', 1080],
        ['calc', 360],
        ['maze', 360],
        ['sql', 360],
      ],
    )
    assert.match(report.html, /<tr><td>calc<\/td><td class="num">360<\/td>/)
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const file = join(dir.path, 'report.html')
    writeFileSync(file, report.html)
    const dom = await dumpDom(file, 60_000, [1280, 800])
    assert.equal(attr(dom, 'data-charts-drawn'), attr(dom, 'data-charts-total'))
    assert.equal(attr(dom, 'data-page-overflow'), '0', 'nothing is wider than a 1280 px window')
    const ticks = /data-y-ticks="([^"]*)"[^>]*><figcaption[^>]*>rollout\/generated_tokens<\/figcaption>/.exec(
      dom,
    )?.[1]
    assert.equal(ticks, '0 1M 2M 3M')
    assert.ok(dom.includes(`<th>${SYNTHETIC_TASK_FAMILIES[2].replace(/\//g, '/<wbr>')}</th>`))
  })

  it('buildChartSections - the SFT curves are drawn against the SFT step, not the learner step', () => {
    const lines = [
      ...syntheticSftMetrics(4, 4),
      { role: 'learner', id: '0', step: 1, time: 0, values: { 'learner/loss': 0.5 } },
      { role: 'learner', id: '0', step: 2, time: 0, values: { 'learner/loss': 0.25 } },
    ]
    const sections = buildChartSections(lines)
    assert.deepEqual(
      sections.map((s) => [s.area, s.charts.map((c) => [c.title, c.xLabel ?? 'step', c.x, c.series[0]!.y])]),
      [
        [
          'sft',
          [
            ['sft/grad_norm', 'SFT step', [1, 2, 3, 4], [0.5, 0.5, 0.5, 0.5]],
            ['sft/loss', 'SFT step', [1, 2, 3, 4], [1.99, 1.98, 1.97, 1.96]],
            ['sft/tokens_per_s', 'SFT step', [1, 2, 3, 4], [4000, 4000, 4000, 4000]],
          ],
        ],
        ['learner', [['learner/loss', 'step', [1, 2], [0.5, 0.25]]]],
      ],
    )
  })

  it('buildReport - the SFT charts draw in headless Chromium with an SFT step axis', async (t) => {
    const dir = await makeSyntheticRun(tmp(), 5)
    appendFileSync(dir.metricsFile, `${syntheticSftMetrics(20, 20).map(formatMetricsLine).join('\n')}\n`)
    const report = await buildReport(dir.path)
    // 3 SFT charts and the synthetic run's 8 (runtime/restarts is constant: listed, not drawn)
    assert.equal(report.charts, 11)
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const file = join(dir.path, 'report.html')
    writeFileSync(file, report.html)
    const dom = await dumpDom(file)
    assert.equal(attr(dom, 'data-charts-drawn'), '11')
    // The x axis of the SFT loss chart is the SFT step.
    assert.match(/<figure([^>]*)><figcaption[^>]*>sft\/loss</.exec(dom)?.[1] ?? '', /data-x="SFT step"/)
  })

  it('buildReport - charts every metric family of a run and its evaluation tables, self-contained', async () => {
    const dir = await makeSyntheticRun(tmp())
    appendFileSync(dir.metricsFile, '{"role":"learner","id":') // a torn last line
    const report = await buildReport(dir.path)
    assert.equal(report.lines, 120)
    assert.equal(report.evals, 1)
    // eval/avg@8 and eval/pass@8 (one evaluated step: points with error bars), rollout/reward,
    // rollout/success, loss/total, env/difficulty, pipeline/staleness_*, engine/tokens_per_s,
    // learner/clip_frac_*, reward/step_accuracy; runtime/restarts is constant: listed, not drawn
    assert.equal(report.charts, 10)
    assert.equal(report.constants, 1)
    assert.match(report.html, /<td class="key">runtime\/restarts<\/td><td class="num">1<\/td>/)
    assert.match(report.html, /Content-Security-Policy" content="default-src 'none'/)
    assert.doesNotMatch(
      report.html,
      /<(script|link|img)[^>]+(src|href)=/i,
      'nothing is loaded from outside the page',
    )
    assert.match(report.html, /skipped 1 line\(s\) that are not metrics reports \(line 121\)/)
    assert.match(report.html, /<th>pass_at_k<\/th>/)
    // latest per task, at step 29: success calc = 0.1 + 29/40, reward = -0.5 + 29/30, difficulty 3
    assert.match(
      report.html,
      /<th>rollout\/<wbr>reward<\/th><th>rollout\/<wbr>success<\/th><th>env\/<wbr>difficulty<\/th>.*<tr><td>calc<\/td><td class="num">0\.4667<\/td><td class="num">0\.825<\/td><td class="num">3<\/td><\/tr>/,
    )
  })

  it('evalCharts - avg@k and pass@k per task over the evaluated steps: SFT at 0, periodic files, the final', () => {
    const row = (task: string, avg: number, extra: Record<string, string | number> = {}) => ({
      task,
      difficulty: 1,
      k: 8,
      avg_at_k: avg,
      pass_at_k: avg * 2,
      ...extra,
    })
    const results: { result: EvalResult }[] = [
      {
        result: {
          step: 30,
          rows: [
            row('calc', 0.1, { checkpoint: 'sft' }),
            row('sql', 0.2, { checkpoint: 'sft' }),
            row('calc', 0.4, { checkpoint: 'step-30' }),
            row('sql', 0.45, { checkpoint: 'step-30' }),
          ],
        },
      },
      // Two levels of calc at step 10 are averaged; sql was not evaluated at 10.
      { result: { step: 10, rows: [row('calc', 0.2), row('calc', 0.3, { difficulty: 2 })] } },
      { result: { step: 20, rows: [row('calc', 0.3), row('sql', 0.35)] } },
      // Another k at a single step, and a table without a step: no chart.
      { result: { step: 20, k: 4, rows: [{ task: 'calc', k: 4, avg_at_k: 1, pass_at_k: 1 }] } },
      { result: { rows: [row('calc', 0.9)] } },
    ]
    const charts = evalCharts(results)
    assert.deepEqual(
      charts.map((c) => ({ title: c.title, x: c.x, series: c.series.map((s) => [s.label, s.y]) })),
      [
        {
          title: 'eval/avg@8',
          x: [0, 10, 20, 30],
          series: [
            ['calc', [0.1, 0.25, 0.3, 0.4]],
            ['sql', [0.2, null, 0.35, 0.45]],
          ],
        },
        {
          title: 'eval/pass@8',
          x: [0, 10, 20, 30],
          series: [
            ['calc', [0.2, 0.5, 0.6, 0.8]],
            ['sql', [0.4, null, 0.7, 0.9]],
          ],
        },
      ],
    )
    // One evaluated step: no chart.
    assert.deepEqual(evalCharts(results.slice(3)), [])
  })

  it('buildReport - with evaluations at several steps, avg@k and pass@k over steps are charted and drawn', async (t) => {
    const dir = await evaluatedRun(tmp())
    const report = await buildReport(dir.path)
    assert.equal(report.evals, 3)
    assert.equal(report.charts, 10)
    assert.match(report.html, /<figcaption>eval\/avg@8<\/figcaption>/)
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const file = join(dir.path, 'report.html')
    writeFileSync(file, report.html)
    const dom = await dumpDom(file)
    assert.equal(attr(dom, 'data-charts-drawn'), '10', 'every chart has pixels of its series colours')
  })

  it('buildReport - the charts draw in headless Chromium', async (t) => {
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const dir = await makeSyntheticRun(tmp())
    const file = join(dir.path, 'report.html')
    writeFileSync(file, (await buildReport(dir.path)).html)
    const dom = await dumpDom(file)
    assert.equal(attr(dom, 'data-charts-total'), '10')
    assert.equal(attr(dom, 'data-charts-checked'), '10')
    assert.equal(attr(dom, 'data-charts-drawn'), '10', 'every chart has pixels of its series colours')
    assert.match(dom, /held-out avg@8 and pass@8/)
  })

  it('buildReport - the drawn check fails when the chart library is missing', async (t) => {
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const dir = await makeSyntheticRun(tmp(), 5)
    const file = join(dir.path, 'broken.html')
    const html = (await buildReport(dir.path)).html
    const start = html.indexOf('<script id="chart-library">')
    assert.ok(start > 0, 'the inlined uPlot build is found')
    writeFileSync(
      file,
      html.slice(0, start) + html.slice(html.indexOf('</script>', start) + '</script>'.length),
    )
    const dom = await dumpDom(file)
    assert.equal(attr(dom, 'data-charts-total'), '10')
    assert.equal(attr(dom, 'data-charts-drawn'), '0')
    assert.match(dom, /data-error="ReferenceError: uPlot is not defined"/)
  })

  it('triad report - writes the HTML file; a directory that is not a run is a clear error', async () => {
    const dir = await makeSyntheticRun(tmp(), 3)
    const out = join(tmp(), 'r.html')
    const ok = startTriad(['report', dir.path, '--out', out, '--json'])
    const line = await ok.waitForLine((j) => 'report' in j, 60_000)
    assert.equal(line.report, out)
    assert.equal(line.charts, 10)
    assert.equal((await ok.exited).code, 0)
    assert.match(readFileSync(out, 'utf8'), /^<!doctype html>/)
    // Without --json: the path it wrote, alone.
    const plain = startTriad(['report', dir.path])
    assert.equal((await plain.exited).code, 0, plain.stderr())
    assert.deepEqual(plain.stdout, [`written ${join(dir.path, 'report.html')}`])

    const notRun = tmp()
    const bad = startTriad(['report', notRun])
    assert.equal((await bad.exited).code, 2)
    assert.equal(bad.stderr(), `triad: ${notRun} is not a triad run directory (no recipe.json)\n`)
  })
})

/** The page's data: the dashboard sections as the script draws them. */
type PageData = {
  sections: {
    id: string
    folded: boolean
    charts: {
      id: string
      title: string
      smooth?: boolean
      xRange?: [number, number]
      series: {
        label: string
        colour: string
        dash: number[]
        y: (number | null)[]
        se?: (number | null)[]
      }[]
    }[]
  }[]
}
const pageData = (html: string): PageData =>
  JSON.parse(/<script type="application\/json" id="triad-data">(.*?)<\/script>/s.exec(html)![1]!)

/** TensorBoard's debiased exponential moving average, as the page smooths. */
function ema(y: readonly (number | null)[], w: number): (number | null)[] {
  let last = 0
  let n = 0
  return y.map((v) => {
    if (v === null) return null
    last = last * w + (1 - w) * v
    n++
    return w === 0 ? v : last / (1 - w ** n)
  })
}

describe('bin/report - the dashboard', () => {
  it('buildReport - the headline charts, then the panels in order, then namespaces folded; one colour per task in every chart; error bars from the standard errors', async () => {
    const dir = await evaluatedRun(tmp())
    const report = await buildReport(dir.path)
    const data = pageData(report.html)
    assert.deepEqual(
      data.sections.map((s) => [s.id, s.folded, s.charts.map((c) => c.title)]),
      [
        ['headline', false, ['eval/avg@8', 'rollout/success', 'engine/tokens_per_s']],
        ['evaluation', false, ['eval/pass@8']],
        ['training', false, ['rollout/reward']],
        ['policy', false, ['loss/total']],
        ['difficulty', false, ['env/difficulty']],
        ['throughput', false, ['pipeline/staleness_*']],
        ['ns-learner', true, ['learner/clip_frac_*']],
        ['ns-reward', true, ['reward/step_accuracy']],
        ['ns-runtime', true, []],
      ],
    )
    // Tasks sorted (calc, maze, sql) take the first palette colours, in every chart.
    const colours = new Map<string, Set<string>>()
    for (const c of data.sections.flatMap((s) => s.charts))
      for (const s of c.series) colours.set(s.label, (colours.get(s.label) ?? new Set()).add(s.colour))
    assert.deepEqual([...colours.get('calc')!], ['#1f77b4'])
    assert.deepEqual([...colours.get('maze')!], ['#d62728'])
    assert.deepEqual([...colours.get('sql')!], ['#2ca02c'])
    // A series that is not a task's never has a task's colour.
    for (const [label, set] of colours)
      if (!['calc', 'maze', 'sql'].includes(label))
        for (const c of set) assert.ok(!['#1f77b4', '#d62728', '#2ca02c'].includes(c), `${label}: ${c}`)
    const avg = data.sections[0]!.charts[0]!
    assert.deepEqual(
      avg.series.map((s) => [s.label, s.y, s.se]),
      ['calc', 'maze', 'sql'].map((t) => [t, [0.1, 0.2, 0.5], [0.04, 0.04, 0.03]]),
    )
    // The training charts are smoothed (rollout/success among the headline charts too), no other.
    const smooth = data.sections.flatMap((s) => s.charts.filter((c) => c.smooth).map((c) => c.title))
    assert.deepEqual(smooth, ['rollout/success', 'rollout/reward'])
    // One x range for every chart on the learner's steps.
    assert.deepEqual(
      [...new Set(data.sections.flatMap((s) => s.charts.map((c) => JSON.stringify(c.xRange))))],
      ['[0,30]'],
    )
    // The legend says which colour is which task.
    assert.match(report.html, /<span class="key" data-task="calc" data-colour="#1f77b4">/)
    assert.match(report.html, /<details class="namespace" id="ns-runtime"><summary><b>runtime<\/b>/)
  })

  it('buildReport - in headless Chromium: every chart drawn, error bars drawn, the smoothing control smooths the training charts; a screenshot', async (t) => {
    const missing = chromiumMissing()
    if (missing) return t.skip(missing)
    const dir = await evaluatedRun(tmp())
    const report = await buildReport(dir.path)
    const file = join(dir.path, 'report.html')
    writeFileSync(file, report.html)
    const png = join(dir.path, 'report.png')
    await screenshot(file, png, [1300, 2200])
    assert.ok(statSync(png).size > 50_000, 'a screenshot with charts on it')
    const data = pageData(report.html)
    const success = data.sections[0]!.charts.find((c) => c.title === 'rollout/success')!
    for (const w of [0, 0.9]) {
      const dom = await dumpDom(file, 60_000, [1300, 900], `#smoothing=${w}`)
      assert.equal(attr(dom, 'data-charts-drawn'), '10')
      assert.equal(attr(dom, 'data-charts-total'), '10')
      assert.equal(/<body[^>]*data-smoothing="([^"]+)"/.exec(dom)?.[1], String(w))
      const figureOf = (id: string) =>
        new RegExp(`<figure class="chart" id="${id}"([^>]*)>`).exec(dom)?.[1] ?? ''
      // 3 tasks at 3 evaluated steps, each value with its error bar
      assert.match(figureOf(data.sections[0]!.charts[0]!.id), /data-error-bars="9"/)
      assert.match(figureOf(data.sections[1]!.charts[0]!.id), /data-error-bars="9"/)
      const last = success.series.map((s) => String(Number(ema(s.y, w).at(-1)!.toFixed(6)))).join(' ')
      assert.match(figureOf(success.id), new RegExp(`data-last="${last}"`))
      if (w === 0.9)
        assert.notEqual(
          last,
          success.series.map((s) => String(Number(s.y.at(-1)!.toFixed(6)))).join(' '),
          'smoothing 0.9 moves the last values',
        )
    }
  })

  it('buildReport - several runs overlay: one chart per metric, a dash pattern per run, a task keeps its colour', async () => {
    const runsDir = tmp()
    const a = await evaluatedRun(runsDir, 'base')
    const b = await makeSyntheticRun(runsDir, 20, 'variant')
    const report = await buildReport([a.path, b.path])
    const data = pageData(report.html)
    const success = data.sections.flatMap((s) => s.charts).find((c) => c.title === 'rollout/success')!
    assert.deepEqual(
      success.series.map((s) => [s.label, s.colour, s.dash]),
      [
        [`calc · ${a.id}`, '#1f77b4', []],
        [`maze · ${a.id}`, '#d62728', []],
        [`sql · ${a.id}`, '#2ca02c', []],
        [`calc · ${b.id}`, '#1f77b4', [8, 4]],
        [`maze · ${b.id}`, '#d62728', [8, 4]],
        [`sql · ${b.id}`, '#2ca02c', [8, 4]],
      ],
    )
    // x is the union of the runs' steps; the shorter run has no values past its end.
    const variantCalc = success.series[3]!.y
    assert.equal(variantCalc.length, 30)
    assert.deepEqual(variantCalc.slice(20), Array(10).fill(null))
    assert.match(report.html, new RegExp(`<span class="key" data-run="${b.id}">`))
    assert.match(report.html, new RegExp(`<title>triad runs ${a.id}, ${b.id}</title>`))
  })

  it('triad report RUN_DIR --out - a folder, a missing folder or a path under a file is one line naming it; nothing is written', async () => {
    const run = await makeSyntheticRun(tmp(), 5, 'one')
    const folder = tmp()
    const file = join(tmp(), 'a-file')
    writeFileSync(file, 'x')
    for (const [out, why] of [
      [folder, `it is a folder; give a file \\(--out ${join(folder, 'report.html')}\\)`],
      [join(folder, 'missing', 'r.html'), `the folder ${join(folder, 'missing')} does not exist`],
      [join(file, 'r.html'), `a part of ${file} is a file, not a folder`],
    ] as const) {
      const bad = startTriad(['report', run.path, '--out', out])
      const exit = await bad.exited
      assert.equal(exit.code, 1, bad.stderr())
      assert.match(bad.stderr(), new RegExp(`^triad: cannot write ${out}: ${why}\\n$`))
    }
    assert.deepEqual(readdirSync(folder), [])
    assert.equal(readFileSync(file, 'utf8'), 'x')
  })

  it('triad report RUN_DIR RUN_DIR - writes the overlay to --out; several runs without --out exit 2', async () => {
    const runsDir = tmp()
    const a = await makeSyntheticRun(runsDir, 5, 'one')
    const b = await makeSyntheticRun(runsDir, 5, 'two')
    const out = join(tmp(), 'both.html')
    const ok = startTriad(['report', a.path, b.path, '--out', out, '--json'])
    const line = await ok.waitForLine((j) => 'report' in j, 60_000)
    assert.equal(line.runs, 2)
    assert.equal((await ok.exited).code, 0)
    assert.match(readFileSync(out, 'utf8'), new RegExp(`triad runs ${a.id}, ${b.id}`))
    const bad = startTriad(['report', a.path, b.path])
    assert.equal((await bad.exited).code, 2)
    assert.match(bad.stderr(), /--out FILE is required with several run directories/)
  })
})
