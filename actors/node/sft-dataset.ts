import { readFileSync } from 'node:fs'
import { extname } from 'node:path'
import { parquetReadObjects } from 'hyparquet'
import { z } from 'zod'
import {
  type ChatMessage,
  ChatMessageSchema,
  SessionStatus,
  type ToolSchema,
  ToolSchemaSchema,
} from '../../protocols/index.ts'
import { SftDatasetError } from './errors.ts'

/**
 * One episode of SFT data (a scripted expert's, or a dataset row): the conversation, the tools it
 * had and how it ended.
 */
export interface ExpertEpisode {
  messages: ChatMessage[]
  tools: ToolSchema[]
  /** How the episode ended; `task_error` episodes are never SFT data (`sftEpisodes`). */
  status: SessionStatus
}

/** File formats of an SFT dataset. Closed set. */
export const SftDatasetFormat = { Jsonl: 'jsonl', Parquet: 'parquet' } as const
export type SftDatasetFormat = (typeof SftDatasetFormat)[keyof typeof SftDatasetFormat]

/** One dataset of `sft.datasets`: its file and format (absent: from the extension, `.jsonl` or `.parquet`). */
export interface SftDataset {
  path: string
  format?: SftDatasetFormat
}

/** The roles a message may have (OpenAI chat). */
const ROLES = ['system', 'user', 'assistant', 'tool'] as const

/**
 * One row: an OpenAI chat conversation with tool calls, `{"messages": [...], "tools": [...]}` (the
 * shape of DemyAgent's and verl's multi-turn SFT sets). Other fields of a row are ignored.
 */
const RowSchema = z.object({
  messages: z.array(ChatMessageSchema).min(1),
  tools: z.array(ToolSchemaSchema).default([]),
})

/** The format of `path`: `format` when given, else by the extension. @throws SftDatasetError for another extension. */
function formatOf(d: SftDataset): SftDatasetFormat {
  if (d.format) return d.format
  const ext = extname(d.path).toLowerCase()
  if (ext === '.jsonl') return SftDatasetFormat.Jsonl
  if (ext === '.parquet') return SftDatasetFormat.Parquet
  throw new SftDatasetError(
    d.path,
    0,
    '',
    `cannot tell the format from the extension '${ext}': name it .jsonl or .parquet, or give format`,
  )
}

/** `messages[2].role` from a zod issue path. */
function fieldOf(path: readonly PropertyKey[]): string {
  let out = ''
  for (const p of path) out += typeof p === 'number' ? `[${p}]` : `${out ? '.' : ''}${String(p)}`
  return out
}

/** A column a parquet writer stored as JSON text (not as nested lists): its parsed value. */
function parsedColumn(raw: Record<string, unknown>, key: string, file: string, row: number): unknown {
  const v = raw[key]
  if (typeof v !== 'string') return v
  try {
    return JSON.parse(v)
  } catch (err) {
    throw new SftDatasetError(file, row, key, 'is a string that is not JSON', err)
  }
}

/**
 * Validates one row and makes it an SFT episode. A tool call's `arguments` may be the JSON text
 * (OpenAI's shape) or an object (written out as JSON).
 * @throws SftDatasetError naming the file, row and field: a row without messages, an unknown role,
 *   a missing or mistyped field, a tool call whose arguments are not JSON.
 */
export function sftRow(raw: unknown, file: string, row: number): ExpertEpisode {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw new SftDatasetError(file, row, '', 'is not an object with messages')
  const obj = raw as Record<string, unknown>
  const input = {
    ...obj,
    messages: parsedColumn(obj, 'messages', file, row),
    tools: parsedColumn(obj, 'tools', file, row) ?? [],
  }
  if (input.messages === undefined || input.messages === null)
    throw new SftDatasetError(file, row, 'messages', 'missing (a row is {"messages": [...], "tools": [...]})')
  // Arguments given as objects become their JSON text before validation.
  if (Array.isArray(input.messages))
    input.messages = input.messages.map((m: unknown) => {
      const calls = (m as { tool_calls?: unknown })?.tool_calls
      if (!Array.isArray(calls)) return m
      return {
        ...(m as object),
        tool_calls: calls.map((c: { function?: { arguments?: unknown } }) =>
          c?.function && typeof c.function.arguments === 'object' && c.function.arguments !== null
            ? { ...c, function: { ...c.function, arguments: JSON.stringify(c.function.arguments) } }
            : c,
        ),
      }
    })
  const parsed = RowSchema.safeParse(input)
  if (!parsed.success) {
    const issue = parsed.error.issues[0]!
    const field = fieldOf(issue.path)
    // An unknown role fails the union of message shapes: say so (zod names the discriminator).
    if (issue.path[0] === 'messages' && typeof issue.path[1] === 'number') {
      const m = (input.messages as unknown[])[issue.path[1]] as { role?: unknown } | undefined
      if (m && typeof m === 'object' && !ROLES.includes(m.role as never))
        throw new SftDatasetError(
          file,
          row,
          `messages[${issue.path[1]}].role`,
          `unknown role ${JSON.stringify(m.role)} (one of ${ROLES.join(', ')})`,
        )
    }
    throw new SftDatasetError(file, row, field, issue.message)
  }
  const messages: ChatMessage[] = parsed.data.messages
  messages.forEach((m, i) => {
    if (m.role !== 'assistant') return
    m.tool_calls?.forEach((c, j) => {
      try {
        JSON.parse(c.function.arguments)
      } catch {
        throw new SftDatasetError(
          file,
          row,
          `messages[${i}].tool_calls[${j}].function.arguments`,
          `is not JSON: ${JSON.stringify(c.function.arguments.slice(0, 60))}`,
        )
      }
    })
  })
  return { messages, tools: parsed.data.tools, status: SessionStatus.Completed }
}

/**
 * Reads and validates every row of an SFT dataset: JSONL (one JSON object a line, blank lines
 * skipped) or parquet (through hyparquet; `messages` and `tools` as nested columns or JSON text).
 * @returns one episode per row, in file order.
 * @throws SftDatasetError for a file that cannot be read or parsed, or at the first bad row.
 */
export async function readSftDataset(d: SftDataset): Promise<ExpertEpisode[]> {
  const format = formatOf(d)
  let bytes: Buffer
  try {
    bytes = readFileSync(d.path)
  } catch (err) {
    throw new SftDatasetError(d.path, 0, '', `cannot be read: ${(err as Error).message}`, err)
  }
  if (format === SftDatasetFormat.Jsonl) {
    const out: ExpertEpisode[] = []
    bytes
      .toString('utf8')
      .split('\n')
      .forEach((line, i) => {
        if (line.trim() === '') return
        let raw: unknown
        try {
          raw = JSON.parse(line)
        } catch (err) {
          throw new SftDatasetError(d.path, i + 1, '', `is not JSON: ${(err as Error).message}`, err)
        }
        out.push(sftRow(raw, d.path, i + 1))
      })
    return out
  }
  let rows: Record<string, unknown>[]
  try {
    rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
      columns: undefined,
    })
  } catch (err) {
    throw new SftDatasetError(
      d.path,
      0,
      '',
      `is not a parquet file hyparquet reads: ${(err as Error).message}`,
      err,
    )
  }
  return rows.map((raw, i) => sftRow(raw, d.path, i + 1))
}

/** Every row of every dataset, in order. @throws SftDatasetError (see `readSftDataset`). */
export async function readSftDatasets(datasets: readonly SftDataset[]): Promise<ExpertEpisode[]> {
  const out: ExpertEpisode[] = []
  for (const d of datasets) out.push(...(await readSftDataset(d)))
  return out
}
