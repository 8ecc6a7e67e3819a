import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import type { EvalResult } from '../../actors/index.ts'
import type { ChartSection, LatestPerTask } from './chart-groups.ts'
import { formatTick } from './tick-format.ts'

const require = createRequire(import.meta.url)

/** uPlot's browser build and stylesheet, read from node_modules to be inlined in the page. */
export function chartLibrary(): { js: string; css: string } {
  return {
    js: readFileSync(require.resolve('uplot/dist/uPlot.iife.min.js'), 'utf8'),
    css: readFileSync(require.resolve('uplot/dist/uPlot.min.css'), 'utf8'),
  }
}

/** Series colours (saturated, so the page's self-check can tell a drawn line from axes and grid). */
export const PALETTE = [
  '#1f77b4',
  '#d62728',
  '#2ca02c',
  '#ff7f0e',
  '#9467bd',
  '#17becf',
  '#e377c2',
  '#8c564b',
  '#bcbd22',
  '#0047ab',
]

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

/** What the report page shows. */
export interface ReportContent {
  runId: string
  /** The run's stored recipe (shown folded). */
  recipe: unknown
  sections: ChartSection[]
  /** The newest value of each per-task series (shown first). */
  latest: LatestPerTask
  evals: { file: string; result: EvalResult }[]
  /** Facts shown under the title: lines read, steps, time span, skipped lines. */
  facts: [string, string][]
  /** Problems shown as warnings (torn metrics lines, unreadable eval files). */
  warnings: string[]
}

/**
 * The page's script: draws every chart with uPlot, its y axis labelled by `formatTick` (compact SI:
 * `12k`, `1.25M`) and as wide as its longest label, and, when uPlot has drawn one, checks its
 * canvas for pixels of the series colours. The results are on `<body>`: `data-charts-total`
 * (charts), `data-charts-checked` (drawn or failed so far), `data-charts-drawn` (with a visible
 * series), `data-page-overflow` (px the page is wider than the window; 0 when nothing sticks
 * out); and on each chart's figure: `data-y-ticks` (its y labels, space-separated).
 */
const PAGE_SCRIPT = `
var formatTick = ${formatTick.toString()};
(function () {
  var data = JSON.parse(document.getElementById('triad-data').textContent);
  var palette = data.palette;
  var total = 0, drawn = 0, checked = 0;
  function rgb(hex) { return [1, 3, 5].map(function (i) { return parseInt(hex.slice(i, i + 2), 16); }); }
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
  }
  data.sections.forEach(function (section) { total += section.charts.length; });
  publish();
  data.sections.forEach(function (section) {
    section.charts.forEach(function (chart) {
      var box = document.getElementById(chart.id);
      var colours = chart.series.map(function (_, i) { return rgb(palette[i % palette.length]); });
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
        new uPlot({
          width: 560, height: 240,
          scales: { x: { time: false } },
          axes: [{ label: chart.xLabel || 'step' }, {
            size: axisSize,
            values: function (u, splits, axisIdx, space, incr) {
              var labels = splits.map(function (v) { return v == null ? '' : formatTick(v, incr); });
              box.setAttribute('data-y-ticks', labels.join(' '));
              return labels;
            },
          }],
          series: [{ label: chart.xLabel || 'step' }].concat(chart.series.map(function (s, i) {
            var colour = palette[i % palette.length];
            return { label: s.label, stroke: colour, width: 2, spanGaps: true,
                     points: { show: few, size: 5, fill: colour } };
          })),
          hooks: { draw: [check] },
        }, [chart.x].concat(chart.series.map(function (s) { return s.y; })), box);
      } catch (e) {
        checked++;
        box.setAttribute('data-error', String(e));
        box.appendChild(document.createTextNode('chart failed: ' + e));
        publish();
      }
    });
  });
})();
`

/**
 * Renders the report as one self-contained HTML page: the chart library (uPlot) and its stylesheet
 * are inlined and a Content-Security-Policy forbids every network load, so it opens offline.
 */
export function renderReportHtml(content: ReportContent): string {
  const lib = chartLibrary()
  let n = 0
  const sections = content.sections.map((s) => ({
    area: s.area,
    charts: s.charts.map((c) => ({ ...c, id: `chart-${n++}` })),
  }))
  const chartHtml = sections
    .map(
      (s) =>
        `<section class="area"><h2>${escapeHtml(s.area)}</h2><div class="grid">${s.charts
          .map(
            (c) =>
              `<figure class="chart" id="${c.id}"><figcaption>${escapeHtml(c.title)}</figcaption></figure>`,
          )
          .join('')}</div></section>`,
    )
    .join('\n')
  const latest = content.latest
  const latestHtml =
    latest.columns.length && latest.rows.length
      ? `<section class="area"><h2>latest per task</h2>${scrollingTable(
          `<thead><tr><th>task</th>${latest.columns.map(headerCell).join('')}</tr></thead><tbody>${latest.rows
            .map(
              (r) =>
                `<tr><td>${escapeHtml(r.task)}</td>${r.values.map((v) => `<td class="num">${escapeHtml(formatCell(v))}</td>`).join('')}</tr>`,
            )
            .join('')}</tbody>`,
          'latest',
        )}</section>`
      : ''
  const evalHtml = content.evals.length
    ? `<section class="area"><h2>evaluation</h2>${content.evals.map((e) => evalTable(e.file, e.result)).join('\n')}</section>`
    : ''
  const title = `triad run ${content.runId}`
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
.facts { display: flex; flex-wrap: wrap; gap: 4px 20px; color: #555; }
.warn { color: #a15c00; }
.grid { display: flex; flex-wrap: wrap; gap: 16px; }
figure.chart { margin: 0; } figcaption { font-weight: 600; margin-bottom: 4px; font-family: ui-monospace, monospace; }
.table-scroll { max-width: 100%; overflow-x: auto; margin: 6px 0 16px; }
table { border-collapse: collapse; } th, td { border: 1px solid #ddd; padding: 3px 8px; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } .meta { color: #555; margin: 0; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; }
</style>
</head>
<body>
<h1>${escapeHtml(title)}</h1>
<div class="facts">${content.facts.map(([k, v]) => `<span><b>${escapeHtml(k)}</b> ${escapeHtml(v)}</span>`).join('')}</div>
${content.warnings.map((w) => `<p class="warn">${escapeHtml(w)}</p>`).join('\n')}
${sections.length ? '' : '<p>No metrics in metrics.jsonl yet.</p>'}
${latestHtml}
${chartHtml}
${evalHtml}
<section class="area"><h2>recipe</h2><details><summary>recipe.json</summary><pre>${escapeHtml(
    JSON.stringify(content.recipe, null, 2),
  )}</pre></details></section>
<script type="application/json" id="triad-data">${scriptJson({ palette: PALETTE, sections })}</script>
<script id="chart-library">${lib.js.replace(/<\/script/gi, '<\\/script')}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`
}
