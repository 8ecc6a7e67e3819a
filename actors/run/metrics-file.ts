import { readFile } from 'node:fs/promises'
import { MetricsAxes, MetricsReport, type PayloadOf } from '../../protocols/index.ts'

/**
 * One line of `metrics.jsonl`: a `metrics.report` payload (`role`, `id`, `step`, `axis` when the
 * step is not the learner step, `time` ms, `values`).
 */
export type MetricsLine = PayloadOf<typeof MetricsReport>

/** True when the line's `step` is a learner step (no `axis`, or `axis: 'learner'`). */
export function onLearnerAxis(line: MetricsLine): boolean {
  return line.axis === undefined || line.axis === MetricsAxes.learner
}

/** The lines of a metrics file; `bad` lists the 1-based numbers of lines that did not parse. */
export interface MetricsFile {
  lines: MetricsLine[]
  bad: number[]
}

/** Formats one metrics line (no trailing newline). */
export function formatMetricsLine(line: MetricsLine): string {
  return JSON.stringify({
    role: line.role,
    id: line.id,
    step: line.step,
    ...(line.axis !== undefined ? { axis: line.axis } : {}),
    time: line.time,
    values: line.values,
  })
}

/**
 * Parses `metrics.jsonl` text. A line that is not JSON or not a `metrics.report` payload (a run
 * killed mid-write leaves a torn last line) is skipped and its number recorded in `bad`.
 */
export function parseMetricsLines(text: string): MetricsFile {
  const lines: MetricsLine[] = []
  const bad: number[] = []
  text.split('\n').forEach((raw, i) => {
    if (raw.trim() === '') return
    try {
      const parsed = MetricsReport.schema.safeParse(JSON.parse(raw))
      if (parsed.success) lines.push(parsed.data)
      else bad.push(i + 1)
    } catch {
      bad.push(i + 1)
    }
  })
  return { lines, bad }
}

/** Reads and parses a metrics file; a missing file reads as empty. */
export async function readMetricsFile(path: string): Promise<MetricsFile> {
  const text = await readFile(path, 'utf8').catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return ''
    throw err
  })
  return parseMetricsLines(text)
}
