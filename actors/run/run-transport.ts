import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { appendRunLog, type RunDir, runDirPaths } from './run-dir.ts'

/** The closed set of the ways a run's roles talk. */
export const RunTransportKind = {
  /** Over a NATS server (the embedded one, or `--nats URL`): roles in processes, on any machine. */
  nats: 'nats',
  /** In one process on the in-process transport: no server, nothing outside the process can attach. */
  inProcess: 'in-process',
} as const
export type RunTransportKind = (typeof RunTransportKind)[keyof typeof RunTransportKind]

/** How a run's roles talk, as `triad run` records it (event `transport` of `logs/run.jsonl`). */
export interface RunTransport {
  transport: RunTransportKind
  /** The NATS server URL(s) (`nats` only). */
  url?: string
  /** The embedded server's monitoring URL, when there is one. */
  monitor?: string
  /** Why the run is in one process (`in-process` only), as printed. */
  reason?: string
}

/** Appends the run's transport to `logs/run.jsonl` (once per start or resume). */
export async function recordRunTransport(
  dir: RunDir,
  transport: RunTransport,
  time = Date.now(),
): Promise<void> {
  await appendRunLog(dir, 'run', { event: 'transport', time, ...transport })
}

/**
 * The transport of the latest start or resume of the run in directory `path`, from its
 * `logs/run.jsonl`; undefined when the directory, the log or the event is missing (a run started
 * before the event existed). Lines that are not JSON are skipped.
 */
export async function readRunTransport(path: string): Promise<RunTransport | undefined> {
  let text: string
  try {
    text = await readFile(join(runDirPaths(path).logsDir, 'run.jsonl'), 'utf8')
  } catch {
    return undefined
  }
  let found: RunTransport | undefined
  for (const line of text.split('\n')) {
    if (!line.trim()) continue
    try {
      const e = JSON.parse(line) as Record<string, unknown>
      if (e.event === 'transport' && (e.transport === 'nats' || e.transport === 'in-process'))
        found = {
          transport: e.transport,
          ...(typeof e.url === 'string' ? { url: e.url } : {}),
          ...(typeof e.monitor === 'string' ? { monitor: e.monitor } : {}),
          ...(typeof e.reason === 'string' ? { reason: e.reason } : {}),
        }
    } catch {}
  }
  return found
}
