import { basename } from 'node:path'
import { type EvalResult, isFinalEvalFile, type MetricsLine, onLearnerAxis } from '../../actors/index.ts'

/**
 * The summary a report opens with, per run: the run's facts and its held-out result (the SFT
 * checkpoint against the final one, with the paired difference), from the run directory's own
 * files: `recipe.json`, `logs/run.jsonl`, `metrics.jsonl` and the newest `eval/final-<ms>.json`.
 */

/** A mean with its standard error. */
export interface MeanSe {
  mean: number
  se: number
}

/** One row of the held-out table: a task (or `mean`, the mean over tasks). */
export interface HeldOutRow {
  task: string
  /** avg@k of the SFT checkpoint (`checkpoint: sft` rows). */
  sft?: MeanSe
  /** avg@k of the final checkpoint (`checkpoint: step-<n>` rows). */
  final?: MeanSe
  /** The paired difference final minus SFT (`paired`), over `n` instances. */
  diff?: MeanSe & { n: number }
}

/** The held-out table of a run, from its newest end-of-run evaluation file. */
export interface HeldOutTable {
  /** The file (`eval/final-<ms>.json`, absolute). */
  file: string
  /** Samples per instance. */
  k?: number
  /** The final checkpoint's name (`step-<n>`). */
  final: string
  /** One row per task, sorted, then `mean`. */
  rows: HeldOutRow[]
}

/** A run's summary: its facts in order, and its held-out table when it has an end-of-run evaluation. */
export interface RunSummary {
  runId: string
  facts: [string, string][]
  heldOut?: HeldOutTable
}

/** What `summarizeRun` reads, as the report has read it. */
export interface RunSummaryInput {
  runId: string
  /** The stored `recipe.json` (any shape: the facts take what they find). */
  recipe: unknown
  /** The events of `logs/run.jsonl` (`readRunEvents`). */
  events: readonly Record<string, unknown>[]
  /** The valid lines of `metrics.jsonl`. */
  lines: readonly MetricsLine[]
  evals: readonly { file: string; result: EvalResult }[]
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined)

/** The model in one line: the pretrained directory's name (LoRA rank), or the width x layers of triad's own. */
export function modelLine(recipe: unknown): string {
  const m = (recipe as { model?: Record<string, unknown> } | null)?.model
  if (!m || typeof m !== 'object') return '-'
  const lora = m.lora as { rank?: unknown } | undefined
  if (typeof m.hf === 'string')
    return `${basename(m.hf)} (pretrained${num(lora?.rank) !== undefined ? `, LoRA rank ${lora!.rank}` : ''})`
  const parts = [
    num(m.width) !== undefined ? `width ${m.width}` : '',
    num(m.layers) !== undefined ? `${m.layers} layer${m.layers === 1 ? '' : 's'}` : '',
    num(m.heads) !== undefined ? `${m.heads} head${m.heads === 1 ? '' : 's'}` : '',
  ].filter(Boolean)
  return parts.length ? `triad transformer, ${parts.join(', ')}` : '-'
}

/**
 * The wall time of a run, ms: each attempt from its `start` or `resume` to its `stop` (an attempt
 * without one, killed or still running, to the last metrics report after its start).
 */
export function wallTimeMs(
  events: readonly Record<string, unknown>[],
  lines: readonly MetricsLine[],
): number {
  let total = 0
  let from: number | undefined
  const lastReport = lines.reduce((a, l) => Math.max(a, l.time), -Infinity)
  for (const e of events) {
    const t = num(e.time)
    if (t === undefined) continue
    if (e.event === 'start' || e.event === 'resume') {
      if (from !== undefined && lastReport > from) total += Math.min(lastReport, t) - from
      from = t
    } else if (e.event === 'stop' && from !== undefined) {
      total += t - from
      from = undefined
    }
  }
  if (from !== undefined && lastReport > from) total += lastReport - from
  return total
}

/** `1 h 05 min`, `12.5 min`, `40 s`. */
export function formatWallTime(ms: number): string {
  if (ms < 60_000) return `${Math.round(ms / 1000)} s`
  if (ms < 3_600_000) return `${(ms / 60_000).toFixed(1)} min`
  const min = Math.round(ms / 60_000)
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`
}

/** The mean over tasks of per-task means, with the standard error of a mean of independent ones. */
function meanOver(xs: readonly MeanSe[]): MeanSe | undefined {
  if (xs.length === 0) return undefined
  return {
    mean: xs.reduce((a, x) => a + x.mean, 0) / xs.length,
    se: Math.sqrt(xs.reduce((a, x) => a + x.se * x.se, 0)) / xs.length,
  }
}

/**
 * The held-out table of the newest end-of-run evaluation among `evals` (`eval/final-<ms>.json`):
 * per task, avg@k ± SE of the SFT checkpoint and of the final one (`step-<n>`, the file's step), and
 * the file's paired difference of the two; then `mean`: the mean over the tasks of each (standard
 * errors combined as of independent tasks) and the file's paired difference of the mean. Undefined
 * when the run has no such file.
 */
export function heldOutTable(
  evals: readonly { file: string; result: EvalResult }[],
): HeldOutTable | undefined {
  const newest = evals.filter((e) => isFinalEvalFile(basename(e.file))).at(-1)
  if (!newest) return undefined
  const r = newest.result
  const final = r.step !== undefined ? `step-${r.step}` : undefined
  const finalName =
    final ??
    (r.rows.map((row) => row.checkpoint).find((c) => typeof c === 'string' && c !== 'sft') as string) ??
    'final'
  const of = (row: Record<string, unknown>): MeanSe | undefined => {
    const mean = num(row.avg_at_k)
    const se = num(row.avg_at_k_se)
    return mean === undefined ? undefined : { mean, se: se ?? 0 }
  }
  const byTask = new Map<string, HeldOutRow>()
  const rowOf = (task: string) => {
    const row = byTask.get(task) ?? { task }
    byTask.set(task, row)
    return row
  }
  for (const row of r.rows) {
    if (typeof row.task !== 'string') continue
    const value = of(row)
    if (!value) continue
    if (row.checkpoint === 'sft') rowOf(row.task).sft = value
    else if (row.checkpoint === finalName) rowOf(row.task).final = value
  }
  const tasks = [...byTask.keys()].sort()
  const rows = tasks.map((t) => byTask.get(t)!)
  const mean: HeldOutRow = { task: 'mean' }
  const sfts = rows.map((x) => x.sft).filter((x): x is MeanSe => x !== undefined)
  const finals = rows.map((x) => x.final).filter((x): x is MeanSe => x !== undefined)
  if (sfts.length === rows.length) mean.sft = meanOver(sfts)
  if (finals.length === rows.length) mean.final = meanOver(finals)
  for (const p of r.paired ?? []) {
    if (p.a !== 'sft' || p.b !== finalName) continue
    const d = { mean: p.avg_at_k_diff, se: p.avg_at_k_diff_se, n: p.n }
    if (p.task === 'mean') mean.diff = d
    else if (byTask.has(p.task)) byTask.get(p.task)!.diff = d
  }
  if (rows.length > 1 || mean.diff) rows.push(mean)
  return { file: newest.file, ...(r.k !== undefined ? { k: r.k } : {}), final: finalName, rows }
}

/**
 * The summary of one run: its facts (recipe, model, commit and machine as the run recorded them at
 * its last start or resume, wall time, steps, restarts of its processes and resumes, how it ended)
 * and its held-out table (`heldOutTable`).
 */
export function summarizeRun(input: RunSummaryInput): RunSummary {
  const { recipe, events, lines } = input
  const facts: [string, string][] = []
  const name = (recipe as { name?: unknown } | null)?.name
  facts.push(['recipe', typeof name === 'string' ? name : '-'])
  facts.push(['model', modelLine(recipe)])
  const started = events.filter((e) => e.event === 'start' || e.event === 'resume')
  const recorded = (key: string) =>
    started
      .map((e) => e[key])
      .filter((v): v is string => typeof v === 'string')
      .at(-1)
  const code = recorded('code')
  facts.push(['commit', code ? shortCommit(code) : 'not recorded'])
  facts.push(['machine', recorded('machine') ?? 'not recorded'])
  facts.push(['wall time', formatWallTime(wallTimeMs(events, lines))])
  const stops = events.filter((e) => e.event === 'stop')
  const lastStop = stops.at(-1)
  const maxStep = lines.filter(onLearnerAxis).reduce((a, l) => Math.max(a, l.step), -Infinity)
  const steps = num(lastStop?.steps) ?? (Number.isFinite(maxStep) ? maxStep : undefined)
  facts.push(['steps', steps === undefined ? '-' : String(steps)])
  const restarts: Record<string, number> = {}
  for (const s of stops)
    for (const [role, n] of Object.entries((s.restarts ?? {}) as Record<string, unknown>))
      if (typeof n === 'number') restarts[role] = (restarts[role] ?? 0) + n
  const total = Object.values(restarts).reduce((a, n) => a + n, 0)
  const per = Object.entries(restarts)
    .filter(([, n]) => n > 0)
    .map(([role, n]) => `${role} ${n}`)
  facts.push(['restarts', per.length ? `${total} (${per.join(', ')})` : String(total)])
  facts.push(['resumes', String(events.filter((e) => e.event === 'resume').length)])
  if (lastStop && started.at(-1) && num(lastStop.time)! >= num(started.at(-1)!.time)!)
    facts.push(['ended', String(lastStop.reason ?? '-')])
  const heldOut = heldOutTable(input.evals)
  return { runId: input.runId, facts, ...(heldOut ? { heldOut } : {}) }
}

/** A commit as people write it: its first 12 hex digits (`+dirty` kept); anything else as it is. */
function shortCommit(code: string): string {
  const m = /^([0-9a-f]{40})(\+dirty)?$/.exec(code)
  return m ? `${m[1]!.slice(0, 12)}${m[2] ?? ''}` : code
}
