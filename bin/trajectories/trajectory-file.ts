import { writeFileSync } from 'node:fs'
import { extname } from 'node:path'
import { parquetWriteBuffer } from 'hyparquet-writer'
import { UsageError } from '../errors.ts'
import type { TrajectoryRow } from './trajectory-rows.ts'

/** The file formats `triad trajectories` writes (and `sft.datasets` reads). Closed set. */
export const TrajectoryFileFormat = { Jsonl: 'jsonl', Parquet: 'parquet' } as const
export type TrajectoryFileFormat = (typeof TrajectoryFileFormat)[keyof typeof TrajectoryFileFormat]

/**
 * The format of `--out FILE` of `triad trajectories` and `triad collect`: `--format` when given,
 * else by the file's extension.
 * @throws UsageError for a `--format` that is neither, or an extension that is neither.
 */
export function outFileFormat(out: string, format: string | undefined): TrajectoryFileFormat {
  const formats: readonly string[] = Object.values(TrajectoryFileFormat)
  const chosen = format ?? formatOfPath(out)
  if (chosen === TrajectoryFileFormat.Jsonl || chosen === TrajectoryFileFormat.Parquet) return chosen
  throw new UsageError(
    format
      ? `--format must be one of ${formats.join(', ')} (got '${format}')`
      : `--out ${out}: cannot tell the format from the extension; name the file .jsonl or .parquet, or give --format`,
  )
}

/** The format of `file` by its extension (`.jsonl`, `.parquet`); undefined for any other. */
export function formatOfPath(file: string): TrajectoryFileFormat | undefined {
  const ext = extname(file).toLowerCase()
  if (ext === '.jsonl') return TrajectoryFileFormat.Jsonl
  if (ext === '.parquet') return TrajectoryFileFormat.Parquet
  return undefined
}

/**
 * One parquet column of a row field: a scalar (`STRING`, `INT32`, `INT64`, `FLOAT`, `DOUBLE`), JSON
 * text (`JSON`: objects and arrays of objects), or with `list` a list of numbers.
 */
export interface RowColumn<R> {
  name: keyof R & string
  type: 'STRING' | 'JSON' | 'INT32' | 'INT64' | 'FLOAT' | 'DOUBLE'
  list?: boolean
}

/** The columns of `triad trajectories`' rows (`TrajectoryRow`). */
export const TRAJECTORY_COLUMNS: readonly RowColumn<TrajectoryRow>[] = [
  { name: 'run', type: 'STRING' },
  { name: 'task', type: 'STRING' },
  { name: 'group_id', type: 'STRING' },
  { name: 'group_seq', type: 'INT64' },
  { name: 'sample', type: 'INT32' },
  { name: 'index', type: 'INT32' },
  // A 32-bit unsigned hash (hashSeed): past int32's range half the time.
  { name: 'seed', type: 'INT64' },
  { name: 'difficulty', type: 'INT32' },
  { name: 'started_version', type: 'INT32' },
  { name: 'trained_step', type: 'INT32' },
  { name: 'reward', type: 'DOUBLE' },
  { name: 'status', type: 'STRING' },
  { name: 'turns', type: 'INT32' },
  { name: 'stale_turns', type: 'INT32' },
  { name: 'metrics', type: 'JSON' },
  { name: 'messages', type: 'JSON' },
  { name: 'tools', type: 'JSON' },
  { name: 'input_ids', type: 'INT32', list: true },
  { name: 'loss_mask', type: 'INT32', list: true },
  { name: 'logprobs', type: 'FLOAT', list: true },
  { name: 'versions', type: 'INT32', list: true },
  { name: 'turn_starts', type: 'INT32', list: true },
]

/** A parquet schema element of one column (lists in the standard 3-level LIST layout). */
function schemaOf<R>(c: RowColumn<R>): Record<string, unknown>[] {
  const leaf = (name: string, repetition: string): Record<string, unknown> => {
    if (c.type === 'STRING')
      return { name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: repetition }
    if (c.type === 'JSON')
      return { name, type: 'BYTE_ARRAY', converted_type: 'JSON', repetition_type: repetition }
    return { name, type: c.type, repetition_type: repetition }
  }
  if (!c.list) return [leaf(c.name, 'REQUIRED')]
  return [
    { name: c.name, repetition_type: 'REQUIRED', converted_type: 'LIST', num_children: 1 },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    leaf('element', 'REQUIRED'),
  ]
}

/**
 * Writes rows to `file`: JSONL (one JSON object a line, every field of a row) or parquet (the
 * `columns`, one row group per 1,000 rows, snappy; `JSON` columns as JSON text, number lists as
 * `list<int32>` / `list<float>`, `INT64` as int64).
 */
export function writeRowsFile<R extends object>(
  file: string,
  format: TrajectoryFileFormat,
  columns: readonly RowColumn<R>[],
  rows: readonly R[],
) {
  if (format === TrajectoryFileFormat.Jsonl) {
    writeFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''))
    return
  }
  const buffer = parquetWriteBuffer({
    columnData: columns.map((c) => ({
      name: c.name,
      data: rows.map((r) => (c.type === 'INT64' ? BigInt(r[c.name] as number) : r[c.name])) as never,
    })),
    schema: [{ name: 'root', num_children: columns.length }, ...columns.flatMap(schemaOf)] as never,
    rowGroupSize: 1000,
  })
  writeFileSync(file, new Uint8Array(buffer))
}

/**
 * Writes `triad trajectories`' rows to `file` (`writeRowsFile` with `TRAJECTORY_COLUMNS`: `metrics`,
 * `messages` and `tools` as JSON text, the token arrays as `list<int32>` / `list<float>`,
 * `group_seq` and `seed` int64). Float32 log-probabilities are exact in both formats.
 */
export function writeTrajectoryFile(
  file: string,
  format: TrajectoryFileFormat,
  rows: readonly TrajectoryRow[],
) {
  writeRowsFile(file, format, TRAJECTORY_COLUMNS, rows)
}
