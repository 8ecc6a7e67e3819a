import { existsSync, readdirSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { checkpointStep } from './checkpoint-pruning.ts'
import { type PipelineCheckpoint, readAckRecords, readLatestCheckpoint } from './checkpoint-records.ts'
import { NoReadableCheckpointError } from './errors.ts'

/** The first line of an error's message. */
const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split('\n')[0]!

/**
 * The step checkpoints a resumed learner may start from, newest first: the one `latest.json` names,
 * then the older `step-<n>/` directories the run kept (`checkpoints.keep`), each with the stream
 * sequences its ack record lists as used. A `step-<n>/` newer than `latest.json` is never one: its
 * groups may not be acknowledged yet. When `latest.json` does not parse, every `step-<n>/` is a
 * candidate and the error is returned. Empty without `latest.json` (a run that has not checkpointed
 * a step: it starts from the SFT).
 */
export function resumeCandidates(checkpointDir: string): {
  candidates: PipelineCheckpoint[]
  /** Why `latest.json` could not be read, when it could not. */
  latestError?: string
} {
  if (!existsSync(join(checkpointDir, 'latest.json'))) return { candidates: [] }
  let latest: PipelineCheckpoint | undefined
  let latestError: string | undefined
  try {
    latest = readLatestCheckpoint(checkpointDir)
  } catch (err) {
    latestError = `${join(checkpointDir, 'latest.json')}: ${firstLine(err)}`
  }
  let acks: ReturnType<typeof readAckRecords> = []
  try {
    acks = readAckRecords(checkpointDir)
  } catch {
    // The learner loop reads the audit trail itself and reports it.
  }
  const below = latest?.version ?? Number.POSITIVE_INFINITY
  const older = readdirSync(checkpointDir)
    .map((name) => ({ name, step: checkpointStep(name) }))
    .filter((c): c is { name: string; step: number } => c.step !== undefined && c.step < below)
    .filter((c) => statSync(join(checkpointDir, c.name)).isDirectory())
    .sort((a, b) => b.step - a.step)
    .map((c) => ({
      version: c.step,
      usedSeqs: acks.filter((r) => r.version === c.step).flatMap((r) => r.used),
      dir: join(checkpointDir, c.name),
    }))
  return { candidates: latest ? [latest, ...older] : older, ...(latestError ? { latestError } : {}) }
}

/**
 * Restores a resumed learner from the newest step checkpoint that can be read: `restore` is called
 * with each of `resumeCandidates` in turn until one does not throw. Each one skipped gets a line on
 * `log` naming it and why (`skipping step-3: it cannot be read (...); trying step-2`); a skipped
 * checkpoint is left in place (the learner writes that step again as it gets there).
 * Never falls back to the SFT checkpoint: that would throw away the run's RL steps.
 * @param restore loads one checkpoint into the learner; throws when it cannot be read, leaving the
 *   learner as it was.
 * @returns the checkpoint restored, or undefined when the run has no `latest.json` (nothing to
 *   resume from; `restore` is not called).
 * @throws NoReadableCheckpointError (not restartable) when no candidate can be read.
 */
export async function restoreNewestCheckpoint(
  checkpointDir: string,
  restore: (checkpoint: PipelineCheckpoint) => Promise<void>,
  log: (line: string) => void,
): Promise<PipelineCheckpoint | undefined> {
  const { candidates, latestError } = resumeCandidates(checkpointDir)
  const tried: { name: string; error: string }[] = []
  if (latestError) {
    tried.push({ name: 'latest.json', error: latestError })
    log(`skipping latest.json: it cannot be read (${latestError}); trying the step checkpoints newest first`)
  } else if (candidates.length === 0) return undefined
  for (const [i, c] of candidates.entries()) {
    try {
      await restore(c)
      return c
    } catch (err) {
      const name = `step-${c.version}`
      const next = candidates[i + 1]
      tried.push({ name, error: firstLine(err) })
      log(
        `skipping ${name}: it cannot be read (${firstLine(err)}); ${next ? `trying step-${next.version}` : 'no older step checkpoint is left'}`,
      )
    }
  }
  throw new NoReadableCheckpointError(checkpointDir, tried)
}
