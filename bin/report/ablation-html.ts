import type { AblationFile } from '../ablation/index.ts'
import { PALETTE } from './dashboard.ts'
import { chartLibrary, escapeHtml } from './render-html.ts'

/** `0.412 ± 0.031`, or `-` for a missing value. */
const pm = (v: number | null, se: number | null, signed = false) =>
  v === null ? '-' : `${signed && v >= 0 ? '+' : ''}${v.toFixed(3)} ± ${(se ?? 0).toFixed(3)}`

/**
 * The page of an ablation (`triad ablate` writes it beside `ablation.json` as `ablation.html`):
 * one self-contained HTML file, viewable offline (uPlot inlined). The code and machine the done
 * runs were made with, and their wall times (the RL phase and the whole run: least, most, median). A table of each variant's avg@k
 * per task and for the mean, with its paired difference to the baseline and that difference over
 * its standard error; the runs that failed and why; a chart of the paired differences (the mean
 * over tasks with a band of two standard errors, and each task).
 */
export function renderAblationHtml(file: AblationFile): string {
  const k = file.k
  const rows = file.rows
    .map((r) => {
      const z = r.diff !== null && r.diff_se ? (r.diff / r.diff_se).toFixed(1) : ''
      const cls = r.task === 'mean' ? ' class="mean"' : ''
      return `<tr${cls}><td>${escapeHtml(r.variant)}</td><td>${escapeHtml(r.task)}</td><td class="num">${r.seeds}</td><td class="num">${pm(r.avg_at_k, r.avg_at_k_se)}</td><td class="num">${r.variant === 'baseline' ? '' : pm(r.diff, r.diff_se, true)}</td><td class="num">${z}</td><td class="num">${r.variant === 'baseline' ? '' : r.paired_seeds}</td></tr>`
    })
    .join('')
  const failed = file.runs.filter((r) => r.status !== 'done')
  const failedTable = failed.length
    ? `<h2>Runs without a result</h2><table><thead><tr><th>variant</th><th>seed</th><th>status</th><th>why</th></tr></thead><tbody>${failed
        .map(
          (r) =>
            `<tr><td>${escapeHtml(r.variant)}</td><td class="num">${r.seed}</td><td>${r.status}</td><td>${escapeHtml(r.reason ?? (r.status === 'missing' ? 'not run yet (run the command again to run it)' : ''))}</td></tr>`,
        )
        .join('')}</tbody></table>`
    : ''
  // The chart: x = the variants other than the baseline, y = their paired differences.
  const others = file.variants.filter((v) => v.id !== 'baseline').map((v) => v.id)
  const diffOf = (variant: string, task: string) =>
    file.rows.find((r) => r.variant === variant && r.task === task)
  const series = ['mean', ...file.tasks].map((task) => ({
    label: task === 'mean' ? 'mean over tasks' : task,
    y: others.map((v) => diffOf(v, task)?.diff ?? null),
  }))
  const band = (sign: number) =>
    others.map((v) => {
      const r = diffOf(v, 'mean')
      return r?.diff == null ? null : r.diff + sign * 2 * (r.diff_se ?? 0)
    })
  const chart = { labels: others, series, lo: band(-1), hi: band(1) }
  const lib = chartLibrary()
  const m = file.machine
  // The code and machine each done run was made with, and its wall times: a table filled in over
  // sittings may mix commits and machines. (Counted here rather than with recipes' doneRunsByCode:
  // this module imports recipes' types only, so the CLI does not load recipes and actors at start-up.)
  const done = file.runs.filter((run) => run.status === 'done')
  const countLine = (of: (r: (typeof done)[number]) => string | undefined) => {
    const counts = new Map<string, number>()
    for (const r of done) counts.set(of(r) ?? 'unrecorded', (counts.get(of(r) ?? 'unrecorded') ?? 0) + 1)
    return [...counts].map(([c, n]) => `${n} run${n === 1 ? '' : 's'} with ${escapeHtml(c)}`).join(', ')
  }
  const timeLine = (label: string, of: (r: (typeof done)[number]) => number | undefined) => {
    const t = done.flatMap((r) => (of(r) === undefined ? [] : [of(r)!])).sort((x, y) => x - y)
    if (t.length === 0) return ''
    const median = t.length % 2 ? t[(t.length - 1) / 2]! : (t[t.length / 2 - 1]! + t[t.length / 2]!) / 2
    return `${label} ${t[0]!.toFixed(1)} to ${t.at(-1)!.toFixed(1)} min (median ${median.toFixed(1)}) over ${t.length} run${t.length === 1 ? '' : 's'}`
  }
  const times = [timeLine('RL phase', (r) => r.rlMinutes), timeLine('whole run', (r) => r.minutes)]
    .filter(Boolean)
    .join(' · ')
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>ablation of ${escapeHtml(file.recipe.name)}</title>
<style>${lib.css}
body{font-family:system-ui,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:12px 0}
td,th{border:1px solid #ccc;padding:3px 8px;text-align:left}td.num{text-align:right;font-variant-numeric:tabular-nums}
tr.mean td{font-weight:600;background:#f4f4f4}code{background:#f4f4f4;padding:1px 4px}p.meta{color:#555}</style></head>
<body><h1>Ablation of ${escapeHtml(file.recipe.name)}</h1>
<p class="meta"><code>${escapeHtml(file.command)}</code></p>
<p class="meta">seeds ${escapeHtml(file.seeds.join(', '))} · held-out avg@${k} on ${file.instancesPerTask} instances per task, the same instances and sampling seeds for every variant · last written on ${m.cpus} × ${escapeHtml(m.cpu)}, ${m.memoryGiB} GiB, Node ${escapeHtml(m.node)} · updated ${escapeHtml(file.updated)}</p>
${done.length ? `<p class="meta">code: ${countLine((r) => r.code)}</p><p class="meta">machine: ${countLine((r) => r.machine)}</p>` : ''}
${times ? `<p class="meta">wall time: ${times}</p>` : ''}
<p>avg@${k} ± its standard error over seeds and instances; Δ: the paired difference to the baseline (per seed and instance, then averaged) ± its standard error over seeds and instances; z = Δ / se.</p>
<table><thead><tr><th>variant</th><th>task</th><th>seeds</th><th>avg@${k}</th><th>Δ vs baseline</th><th>z</th><th>paired seeds</th></tr></thead><tbody>${rows}</tbody></table>
${failedTable}
<h2>Paired difference to the baseline</h2><div id="chart"></div>
<script>${lib.js}</script>
<script>(function(){var c=${JSON.stringify(chart).replace(/</g, '\\u003c')};var pal=${JSON.stringify(PALETTE)};
if(!c.labels.length){document.getElementById('chart').textContent='no variant besides the baseline';return;}
var x=c.labels.map(function(_,i){return i+1;});
var s=[{label:'variant'},{label:'mean - 2 se',stroke:'#999',dash:[4,4]},{label:'mean + 2 se',stroke:'#999',dash:[4,4]}].concat(c.series.map(function(t,i){return {label:t.label,stroke:pal[i%pal.length],width:i===0?3:1,points:{show:true,size:7,fill:pal[i%pal.length]}};}));
new uPlot({width:760,height:320,scales:{x:{time:false,range:[0.5,x.length+0.5]}},
axes:[{label:'variant',splits:function(){return x;},values:function(u,sp){return sp.map(function(v){return c.labels[v-1]||'';});}},{label:'Δ avg@${k}'}],series:s},
[x,c.lo,c.hi].concat(c.series.map(function(t){return t.y;})),document.getElementById('chart'));})();</script>
</body></html>
`
}
