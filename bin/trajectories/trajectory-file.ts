import { writeFileSync } from 'node:fs'
import { extname } from 'node:path'
import { parquetWriteBuffer } from 'hyparquet-writer'
import type { TrajectoryRow } from './trajectory-rows.ts'

/** The file formats `triad trajectories` writes (and `sft.datasets` reads). Closed set. */
export const TrajectoryFileFormat = { Jsonl: 'jsonl', Parquet: 'parquet' } as const
export type TrajectoryFileFormat = (typeof TrajectoryFileFormat)[keyof typeof TrajectoryFileFormat]

/** The format of `file` by its extension (`.jsonl`, `.parquet`); undefined for any other. */
export function formatOfPath(file: string): TrajectoryFileFormat | undefined {
  const ext = extname(file).toLowerCase()
  if (ext === '.jsonl') return TrajectoryFileFormat.Jsonl
  if (ext === '.parquet') return TrajectoryFileFormat.Parquet
  return undefined
}

/** Parquet column types of the row fields: scalars, lists of numbers, and JSON text. */
const COLUMNS: readonly { name: keyof TrajectoryRow; type: string; list?: boolean }[] = [
  { name: 'run', type: 'STRING' },
  { name: 'task', type: 'STRING' },
  { name: 'group_id', type: 'STRING' },
  { name: 'group_seq', type: 'INT64' },
  { name: 'sample', type: 'INT32' },
  { name: 'index', type: 'INT32' },
  { name: 'seed', type: 'INT32' },
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
function schemaOf(c: (typeof COLUMNS)[number]): Record<string, unknown>[] {
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
 * Writes the rows to `file`: JSONL (one JSON object a line) or parquet (one row group per 1,000
 * rows, snappy; `metrics`, `messages` and `tools` as JSON text columns, the token arrays as
 * `list<int32>` / `list<float>`, `group_seq` int64). Float32 log-probabilities are exact in both.
 */
export function writeTrajectoryFile(
  file: string,
  format: TrajectoryFileFormat,
  rows: readonly TrajectoryRow[],
) {
  if (format === TrajectoryFileFormat.Jsonl) {
    writeFileSync(file, rows.map((r) => `${JSON.stringify(r)}\n`).join(''))
    return
  }
  const buffer = parquetWriteBuffer({
    columnData: COLUMNS.map((c) => ({
      name: c.name,
      data: rows.map((r) => (c.type === 'INT64' ? BigInt(r[c.name] as number) : r[c.name])) as never,
    })),
    schema: [{ name: 'root', num_children: COLUMNS.length }, ...COLUMNS.flatMap(schemaOf)] as never,
    rowGroupSize: 1000,
  })
  writeFileSync(file, new Uint8Array(buffer))
}
