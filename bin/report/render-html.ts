import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { EvalResult } from '../../actors/index.ts'
import type { LatestPerTask } from './chart-groups.ts'
import type { DashboardSection } from './dashboard.ts'
import type { MeanSe, RunSummary } from './run-summary.ts'
import { formatTick } from './tick-format.ts'

const require = createRequire(import.meta.url)

/** uPlot's browser build and stylesheet, read from node_modules to be inlined in the page. */
export function chartLibrary(): { js: string; css: string } {
  return {
    js: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    css: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  }
}

/** Escapes text for HTML content and attribute values. */
export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)
}

/** JSON safe inside a `<script>` element (no `</script>`, no HTML comment openers). */
function scriptJson(value: unknown): string {
  return JSON.stringify(value)
    .replace(/</g, '\\u003c')
    .replace(/\u2028/g, '\\u2028')
    .replace(/\u2029/g, '\\u2029')
}

function formatCell(v: unknown): string {
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Number(v.toFixed(4)))
  if (v === null || v === undefined) return ''
  return String(v)
}

/** A table header: escaped, with a line-break opportunity after each `/` of a metric key. */
function headerCell(text: string): string {
  return `<th>${escapeHtml(text).replace(/\//g, '/<wbr>')}</th>`
}

/** A table in a box that scrolls sideways when the table is wider than the page. */
function scrollingTable(inner: string, id?: string): string {
  return `<div class="table-scroll"><table${id ? ` id="${id}"` : ''}>${inner}</table></div>`
}

/** One evaluation table: the union of the rows' keys as columns, in first-seen order. */
function evalTable(file: string, r: EvalResult): string {
  const columns: string[] = []
  for (const row of r.rows) for (const k of Object.keys(row)) if (!columns.includes(k)) columns.push(k)
  const meta = [
    r.step !== undefined ? `step ${r.step}` : '',
    r.k !== undefined ? `k = ${r.k}` : '',
    r.checkpoint ? `checkpoint ${r.checkpoint}` : '',
  ].filter(Boolean)
  return `<section class="eval"><h3>${escapeHtml(r.title ?? file)}</h3>${
    meta.length ? `<p class="meta">${escapeHtml(meta.join(' · '))}</p>` : ''
  }${scrollingTable(
    `<thead><tr>${columns.map(headerCell).join('')}</tr></thead><tbody>${r.rows
      .map(
        (row) =>
          `<tr>${columns.map((c) => `<td class="${typeof row[c] === 'number' ? 'num' : ''}">${escapeHtml(formatCell(row[c]))}</td>`).join('')}</tr>`,
      )
      .join('')}</tbody>`,
  )}</section>`
}

/** One run of the report: its facts, evaluation tables, latest values per task and recipe. */
export interface ReportRun {
  runId: string
  /** The run's stored recipe (shown folded). */
  recipe: unknown
  /** The newest value of each per-task series. */
  latest: LatestPerTask
  evals: { file: string; result: EvalResult }[]
  /** Facts shown under the title: lines read, steps, time span, skipped lines. */
  facts: [string, string][]
  /** Problems shown as warnings (torn metrics lines, unreadable eval files). */
  warnings: string[]
}

/** What the report page shows. */
export interface ReportContent {
  /** The runs, in the order given (one run: a run's report; several: an overlay). */
  runs: ReportRun[]
  /** The dashboard: panels first, then the folded namespaces (`buildDashboard`). */
  sections: DashboardSection[]
  /** Each task's colour, as in every chart. */
  taskColours: [string, string][]
  /** Each run's dash pattern (several runs). */
  runDashes: [string, number[]][]
  /** Each run's summary (`summarizeRun`), shown first, side by side for several runs. */
  summaries?: RunSummary[]
}

/**
 * The page's script: draws every chart with uPlot, its y axis labelled by `formatTick` (compact SI:
 * `12k`, `1.25M`) and as wide as its longest label, evaluation values with error bars (± the
 * standard error), and the training charts smoothed by the smoothing control (an exponential
 * moving average with TensorBoard's debiasing, `#smoothing=0.6` in the URL sets it; the raw
 * values are drawn faint behind). When uPlot has drawn a chart it checks its canvas for pixels of
 * the series colours. Results on `<body>`: `data-charts-total` (charts), `data-charts-checked`
 * (drawn or failed so far), `data-charts-drawn` (with a visible series), `data-page-overflow` (px
 * the page is wider than the window; 0 when nothing sticks out), `data-smoothing`; on each chart's
 * figure: `data-x` (what x counts), `data-x-ticks` and `data-y-ticks` (its x and y labels,
 * space-separated; x ticks are whole steps, and every chart on the learner's steps spans the
 * run's one `xRange`), `data-error-bars` (bars drawn) and, on a smoothed chart, `data-last` (the
 * last smoothed value of each series, space-separated).
 */
const PAGE_SCRIPT = `
var formatTick = ${formatTick.toString()};
(function () {
  var data = JSON.parse(document.getElementById('triad-data').textContent);
  var total = 0, drawn = 0, checked = 0;
  var smoothing = 0.6;
  var m = /smoothing=([0-9.]+)/.exec(location.hash);
  if (m) smoothing = Math.min(0.99, Math.max(0, Number(m[1])));
  var slider = document.getElementById('smoothing');
  var shown = document.getElementById('smoothing-value');
  var smoothed = [];
  function rgb(hex) { return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); }); }
  function faint(hex) { return hex + '40'; }
  function hasColour(canvas, colours) {
    var px = canvas.getContext('2d').getImageData(0, 0, canvas.width, canvas.height).data;
    for (var i = 0; i < px.length; i += 4) {
      if (px[i + 3] < 200) continue;
      for (var j = 0; j < colours.length; j++) {
        var c = colours[j];
        if (Math.abs(px[i] - c[0]) + Math.abs(px[i + 1] - c[1]) + Math.abs(px[i + 2] - c[2]) < 24) return true;
      }
    }
    return false;
  }
  // TensorBoard's smoothing: an exponential moving average, debiased for its first points.
  function ema(y, w) {
    var last = 0, n = 0;
    return y.map(function (v) {
      if (v == null || !isFinite(v)) return null;
      last = last * w + (1 - w) * v;
      n++;
      return w === 0 ? v : last / (1 - Math.pow(w, n));
    });
  }
  // uPlot's default range of a y scale: 10% padding, 0 kept in view when the data come near it.
  var Y_RANGE = { min: { pad: 0.1, hard: -Infinity, soft: 0, mode: 3 }, max: { pad: 0.1, hard: Infinity, soft: 0, mode: 3 } };
  // uPlot's own range, widened around a span too small for its ticks (float32 noise around 1).
  function yRange(u, min, max) {
    if (min == null || max == null) return [0, 1];
    if (max - min <= 1e-6 * Math.max(1, Math.abs(max))) {
      var mid = (min + max) / 2, pad = Math.max(1e-3 * Math.abs(mid), 1e-3);
      return [mid - pad, mid + pad];
    }
    return uPlot.rangeNum(min, max, Y_RANGE);
  }
  // Tick steps of an axis of steps: 1, 2, 5 times a power of ten, whole numbers only.
  var STEP_INCRS = [];
  for (var p = 1; p <= 1e9; p *= 10) STEP_INCRS.push(p, 2 * p, 5 * p);
  // The run's one x range (every chart on the learner's steps), widened around a single step.
  function xRange(r) {
    return function () { return r[0] === r[1] ? [r[0] - 1, r[1] + 1] : [r[0], r[1]]; };
  }
  // Measured on every layout cycle: the ticks (and their labels) can change between cycles.
  function axisSize(u, values, axisIdx) {
    var axis = u.axes[axisIdx];
    var size = axis.ticks.size + axis.gap;
    var longest = (values || []).reduce(function (a, v) { return v.length > a.length ? v : a; }, '');
    if (longest !== '') {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / devicePixelRatio;
    }
    return Math.ceil(size);
  }
  function publish() {
    var page = document.documentElement;
    document.body.setAttribute('data-page-overflow', String(Math.max(0, page.scrollWidth - page.clientWidth)));
    document.body.setAttribute('data-charts-total', String(total));
    document.body.setAttribute('data-charts-drawn', String(drawn));
    document.body.setAttribute('data-charts-checked', String(checked));
    document.body.setAttribute('data-smoothing', String(smoothing));
  }
  function columns(chart) {
    var cols = [chart.x];
    chart.series.forEach(function (s) {
      if (chart.smooth) cols.push(s.y, ema(s.y, smoothing));
      else cols.push(s.y);
    });
    return cols;
  }
  function lastValues(cols, chart) {
    return chart.series.map(function (_, i) {
      var y = cols[2 + 2 * i];
      for (var j = y.length - 1; j >= 0; j--) if (y[j] != null) return String(Number(y[j].toFixed(6)));
      return '';
    }).join(' ');
  }
  function errorBars(chart, box) {
    return function (u) {
      var ctx = u.ctx, bars = 0, cap = 4 * devicePixelRatio;
      chart.series.forEach(function (s, i) {
        if (!s.se || !u.series[i + 1].show) return;
        ctx.save();
        ctx.strokeStyle = s.colour;
        ctx.lineWidth = 1.5 * devicePixelRatio;
        s.y.forEach(function (y, j) {
          var se = s.se[j];
          if (y == null || se == null) return;
          var x = u.valToPos(chart.x[j], 'x', true);
          var lo = u.valToPos(y - se, 'y', true), hi = u.valToPos(y + se, 'y', true);
          ctx.beginPath();
          ctx.moveTo(x, lo); ctx.lineTo(x, hi);
          ctx.moveTo(x - cap, lo); ctx.lineTo(x + cap, lo);
          ctx.moveTo(x - cap, hi); ctx.lineTo(x + cap, hi);
          ctx.stroke();
          bars++;
        });
        ctx.restore();
      });
      box.setAttribute('data-error-bars', String(bars));
    };
  }
  data.sections.forEach(function (section) { total += section.charts.length; });
  publish();
  data.sections.forEach(function (section) {
    section.charts.forEach(function (chart) {
      var box = document.getElementById(chart.id);
      box.setAttribute('data-x', chart.xLabel || 'step');
      var colours = chart.series.map(function (s) { return rgb(s.colour); });
      var seen = false;
      function check(u) {
        if (seen) return;
        seen = true;
        checked++;
        var ok = hasColour(u.ctx.canvas, colours);
        if (ok) drawn++;
        box.setAttribute('data-drawn', ok ? '1' : '0');
        publish();
      }
      try {
        var few = chart.x.length <= 40;
        var series = [{ label: chart.xLabel || 'step' }];
        chart.series.forEach(function (s) {
          var line = { label: s.label, stroke: s.colour, width: 2, dash: s.dash, spanGaps: true,
                       points: { show: few, size: 5, fill: s.colour } };
          if (chart.smooth) {
            series.push({ label: s.label + ' (raw)', stroke: faint(s.colour), width: 1, dash: s.dash, spanGaps: true,
                          points: { show: false } });
          }
          series.push(line);
        });
        var hooks = { draw: [check] };
        if (chart.series.some(function (s) { return s.se; })) hooks.draw.unshift(errorBars(chart, box));
        var cols = columns(chart);
        var u = new uPlot({
          width: 520, height: 240,
          scales: { x: chart.xRange ? { time: false, range: xRange(chart.xRange) } : { time: false }, y: { range: yRange } },
          legend: { show: false },
          axes: [{
            label: chart.xLabel || 'step',
            // Steps are whole: whole-number ticks only.
            incrs: STEP_INCRS,
            values: function (u, splits) {
              var labels = splits.map(function (v) { return v == null ? '' : String(Math.round(v)); });
              box.setAttribute('data-x-ticks', labels.join(' '));
              return labels;
            },
          }, {
            label: chart.unit || '',
            size: axisSize,
            values: function (u, splits, axisIdx, space, incr) {
              var labels = splits.map(function (v) { return v == null ? '' : formatTick(v, incr); });
              box.setAttribute('data-y-ticks', labels.join(' '));
              return labels;
            },
          }],
          series: series,
          hooks: hooks,
        }, cols, box);
        if (chart.smooth) {
          box.setAttribute('data-last', lastValues(cols, chart));
          smoothed.push({ u: u, chart: chart, box: box });
        }
      } catch (e) {
        checked++;
        box.setAttribute('data-error', String(e));
        box.appendChild(document.createTextNode('chart failed: ' + e));
        publish();
      }
    });
  });
  if (slider) {
    slider.value = String(smoothing);
    shown.textContent = smoothing.toFixed(2);
    slider.addEventListener('input', function () {
      smoothing = Number(slider.value);
      shown.textContent = smoothing.toFixed(2);
      smoothed.forEach(function (c) {
        var cols = columns(c.chart);
        c.u.setData(cols);
        c.box.setAttribute('data-last', lastValues(cols, c.chart));
      });
      publish();
    });
  }
})();
`

/**
 * A figure for one chart: its title (the meaning as a tooltip), unit, and a legend of its series
 * labels by colour (a run's dash pattern is in the page's legend).
 */
function figure(c: DashboardSection['charts'][number]): string {
  const unit = c.unit ? ` <span class="unit">(${escapeHtml(c.unit)})</span>` : ''
  const tip = c.meaning ? ` title="${escapeHtml(c.meaning)}"` : ''
  const seen = new Map<string, string>()
  for (const s of c.series) {
    const label = s.label.split(' · ')[0]!
    if (!seen.has(label)) seen.set(label, s.colour)
  }
  const keys = [...seen]
    .map(
      ([label, colour]) =>
        `<span class="key" data-colour="${colour}"><i style="background:${colour}"></i>${escapeHtml(label)}</span>`,
    )
    .join('')
  return `<figure class="chart" id="${c.id}"><figcaption${tip}>${escapeHtml(c.title)}</figcaption>${unit ? `<div class="unit-line">${unit}</div>` : ''}<div class="chart-keys">${keys}</div></figure>`
}

/** The legend of task colours (and run dash patterns) shown at the top. */
function legend(content: ReportContent): string {
  const swatch = (colour: string, dash: number[]) =>
    `<svg width="28" height="10" aria-hidden="true"><line x1="0" y1="5" x2="28" y2="5" stroke="${colour}" stroke-width="3"${dash.length ? ` stroke-dasharray="${dash.join(' ')}"` : ''}/></svg>`
  const tasks = content.taskColours.map(
    ([task, colour]) =>
      `<span class="key" data-task="${escapeHtml(task)}" data-colour="${colour}">${swatch(colour, [])} ${escapeHtml(task)}</span>`,
  )
  const runs =
    content.runDashes.length > 1
      ? content.runDashes.map(
          ([run, dash]) =>
            `<span class="key" data-run="${escapeHtml(run)}">${swatch('#404040', dash)} ${escapeHtml(run)}</span>`,
        )
      : []
  return tasks.length + runs.length
    ? `<div class="legend" id="legend">${[...tasks, ...runs].join('')}</div>`
    : ''
}

/** One section: a panel (open) or a namespace (folded, constants listed). */
function sectionHtml(s: DashboardSection, several: boolean, smoothing: boolean): string {
  const control = smoothing
    ? '<label class="smoothing">smoothing <input type="range" id="smoothing" min="0" max="0.99" step="0.01" value="0.6"> <output id="smoothing-value">0.60</output></label>'
    : ''
  const constants = s.constants.length
    ? `<div class="constants"><p class="meta">constant over the run${several ? 's' : ''}, not drawn:</p>${scrollingTable(
        `<thead><tr>${several ? '<th>run</th>' : ''}<th>metric</th><th>value</th></tr></thead><tbody>${s.constants
          .map(
            (c) =>
              `<tr>${several ? `<td>${escapeHtml(c.run)}</td>` : ''}<td class="key">${escapeHtml(c.key)}</td><td class="num">${escapeHtml(formatCell(c.value))}</td></tr>`,
          )
          .join('')}</tbody>`,
        `constants-${s.id}`,
      )}</div>`
    : ''
  const body = `${control}<div class="grid">${s.charts.map(figure).join('')}</div>${constants}`
  if (s.folded)
    return `<details class="namespace" id="${s.id}"><summary><b>${escapeHtml(s.title)}</b> <span class="meta">${s.charts.length} chart${s.charts.length === 1 ? '' : 's'}, ${s.constants.length} constant</span></summary>${body}</details>`
  return `<section class="panel" id="${s.id}"><h2>${escapeHtml(s.title)}</h2>${body}</section>`
}

/** `0.312 ± 0.041`; a difference signed (`+0.126 ± 0.024`); `-` when absent. */
function meanSe(v: MeanSe | undefined, signed = false): string {
  if (!v) return '-'
  const sign = signed && v.mean >= 0 ? '+' : ''
  return `${sign}${v.mean.toFixed(3)} ± ${v.se.toFixed(3)}`
}

/**
 * One run's summary: its facts, then its held-out table (task, SFT checkpoint, final checkpoint,
 * paired difference; a task's name in its colour). Every cell of the table carries `data-task` and
 * `data-col` (`sft`, `final`, `diff`), for a reader of the page.
 */
function summaryHtml(s: RunSummary, colours: Map<string, string>, several: boolean): string {
  const facts = `<dl class="summary-facts">${s.facts
    .map(([k, v]) => `<dt>${escapeHtml(k)}</dt><dd data-fact="${escapeHtml(k)}">${escapeHtml(v)}</dd>`)
    .join('')}</dl>`
  const h = s.heldOut
  const table = h
    ? `<p class="meta">held-out avg@${h.k ?? 'k'} ± 1 standard error, ${escapeHtml(h.file.split('/').slice(-2).join('/'))}</p>${scrollingTable(
        `<thead><tr><th>task</th><th>SFT checkpoint</th><th>final checkpoint (${escapeHtml(h.final)})</th><th>paired difference</th></tr></thead><tbody>${h.rows
          .map((r) => {
            const colour = colours.get(r.task)
            const name = colour
              ? `<span style="color:${colour}">■</span> ${escapeHtml(r.task)}`
              : `<b>${escapeHtml(r.task)}</b>`
            const cell = (col: string, text: string) =>
              `<td class="num" data-task="${escapeHtml(r.task)}" data-col="${col}">${escapeHtml(text)}</td>`
            const n = r.diff ? ` <span class="meta">(n ${r.diff.n})</span>` : ''
            return `<tr><td>${name}</td>${cell('sft', meanSe(r.sft))}${cell('final', meanSe(r.final))}${cell('diff', meanSe(r.diff, true)).replace('</td>', `${n}</td>`)}</tr>`
          })
          .join('')}</tbody>`,
        `held-out-${s.runId}`,
      )}`
    : '<p class="meta">no end-of-run evaluation yet (eval/final-*.json)</p>'
  return `<div class="summary-run" data-run="${escapeHtml(s.runId)}">${several ? `<h3>${escapeHtml(s.runId)}</h3>` : ''}${facts}${table}</div>`
}

/** The latest-values table of a run. */
function latestTable(latest: LatestPerTask): string {
  return latest.columns.length && latest.rows.length
    ? scrollingTable(
        `<thead><tr><th>task</th>${latest.columns.map(headerCell).join('')}</tr></thead><tbody>${latest.rows
          .map(
            (r) =>
              `<tr><td>${escapeHtml(r.task)}</td>${r.values.map((v) => `<td class="num">${escapeHtml(formatCell(v))}</td>`).join('')}</tr>`,
          )
          .join('')}</tbody>`,
        'latest',
      )
    : ''
}

/**
 * Renders the report as one self-contained HTML page: the chart library (uPlot) and its stylesheet
 * are inlined and a Content-Security-Policy forbids every network load, so it opens offline.
 */
export function renderReportHtml(content: ReportContent): string {
  const lib = chartLibrary()
  const several = content.runs.length > 1
  const title = several
    ? `triad runs ${content.runs.map((r) => r.runId).join(', ')}`
    : `triad run ${content.runs[0]?.runId ?? ''}`
  const runHeads = content.runs
    .map(
      (r) =>
        `<div class="run">${several ? `<h3>${escapeHtml(r.runId)}</h3>` : ''}<div class="facts">${r.facts
          .map(([k, v]) => `<span><b>${escapeHtml(k)}</b> ${escapeHtml(v)}</span>`)
          .join('')}</div>${r.warnings.map((w) => `<p class="warn">${escapeHtml(w)}</p>`).join('\n')}</div>`,
    )
    .join('')
  // One smoothing control, in the first section with a smoothed chart.
  const smoothed = content.sections.find((s) => !s.folded && s.charts.some((c) => c.smooth))?.id
  const panels = content.sections
    .filter((s) => !s.folded)
    .map((s) => sectionHtml(s, several, s.id === smoothed))
    .join('\n')
  const colours = new Map(content.taskColours)
  const summaries = content.summaries?.length
    ? `<section class="area" id="summary"><h2>summary</h2><div class="summaries">${content.summaries
        .map((s) => summaryHtml(s, colours, several))
        .join('')}</div></section>`
    : ''
  const namespaces = content.sections.filter((s) => s.folded)
  const namespaceHtml = namespaces.length
    ? `<section class="area" id="namespaces"><h2>every other metric, by namespace</h2>${namespaces
        .map((s) => sectionHtml(s, several, false))
        .join('\n')}</section>`
    : ''
  const tables = content.runs
    .map((r) => {
      const latest = latestTable(r.latest)
      const evals = r.evals.map((e) => evalTable(e.file, e.result)).join('\n')
      return `<section class="area"><h2>${several ? `${escapeHtml(r.runId)}: ` : ''}latest per task and evaluation tables</h2>${latest}${evals}<details><summary>recipe.json</summary><pre>${escapeHtml(
        JSON.stringify(r.recipe, null, 2),
      )}</pre></details></section>`
    })
    .join('\n')
  const charts = content.sections.flatMap((s) => s.charts)
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)}</title>
<style>${lib.css}</style>
<style>
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; border-bottom: 1px solid #ddd; margin-top: 28px; }
h3 { font-size: 14px; margin: 10px 0 2px; }
.facts { display: flex; flex-wrap: wrap; gap: 4px 20px; color: #555; }
.summaries { display: flex; flex-wrap: wrap; gap: 16px 32px; } .summary-run { min-width: 320px; }
dl.summary-facts { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; margin: 6px 0 10px; }
dl.summary-facts dt { color: #555; } dl.summary-facts dd { margin: 0; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 18px; margin: 12px 0; } .legend .key { white-space: nowrap; }
.warn { color: #a15c00; }
.grid { display: flex; flex-wrap: wrap; gap: 16px; }
figure.chart { margin: 0; } figcaption { font-weight: 600; margin-bottom: 4px; font-family: ui-monospace, monospace; }
.unit-line { color: #666; font-size: 12px; margin-top: -4px; }
.chart-keys { display: flex; flex-wrap: wrap; gap: 2px 12px; font-size: 12px; max-width: 520px; }
.chart-keys i { display: inline-block; width: 14px; height: 3px; margin: 0 4px 3px 0; vertical-align: middle; }
details.namespace { margin: 6px 0; border: 1px solid #e4e4e4; border-radius: 4px; padding: 4px 8px; }
details.namespace > summary { cursor: pointer; font-family: ui-monospace, monospace; }
.smoothing { display: inline-block; margin: 4px 0 10px; } td.key { font-family: ui-monospace, monospace; }
.table-scroll { max-width: 100%; overflow-x: auto; margin: 6px 0 16px; }
table { border-collapse: collapse; } th, td { border: 1px solid #ddd; padding: 3px 8px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } .meta { color: #555; margin: 0; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
${summaries}
${runHeads}
${legend(content)}
${charts.length ? '' : '<p>No metrics in metrics.jsonl yet.</p>'}
${panels}
${namespaceHtml}
${tables}
<script type="application/json" id="triad-data">${scriptJson({ sections: content.sections })}</script>
<script id="chart-library">${lib.js.replace(/<\/script/gi, '<\\/script')}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`
}
