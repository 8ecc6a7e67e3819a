import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { CheckpointPruneError, checkpointStep, pruneCheckpoints } from '../../../actors/testing.ts'

/**
 * A checkpoint directory with `sft/`, `step-<n>/` for each of `steps` (a file in each), a folder
 * that is no checkpoint, `latest.json` pointing at `latest` (when given) and `acks.jsonl` with one
 * `used` record per version of `acked`.
 */
function checkpointDir(steps: number[], latest?: number, acked: number[] = []): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'triad-prune-')), 'checkpoints')
  for (const name of ['sft', 'notes', ...steps.map((s) => `step-${s}`)]) {
    mkdirSync(join(dir, name), { recursive: true })
    writeFileSync(join(dir, name, 'model.safetensors'), name)
  }
  if (latest !== undefined)
    writeFileSync(
      join(dir, 'latest.json'),
      JSON.stringify({ version: latest, usedSeqs: [], dir: join(dir, `step-${latest}`) }),
    )
  writeFileSync(
    join(dir, 'acks.jsonl'),
    acked.map((v) => `${JSON.stringify({ version: v, used: [v], dropped: [], duplicates: [] })}\n`).join(''),
  )
  return dir
}

const names = (dir: string) => readdirSync(dir).sort()

describe('actors/pipeline/checkpoint-pruning', () => {
  it('pruneCheckpoints - keeps the latest and the newest older ones up to keep, sft and other files', () => {
    const dir = checkpointDir([1, 2, 3, 4, 5], 5, [1, 2, 3, 4, 5])
    const result = pruneCheckpoints(dir, 2)
    assert.deepEqual(result, {
      removed: ['step-1', 'step-2', 'step-3'],
      kept: ['step-4', 'step-5'],
      failed: [],
    })
    assert.deepEqual(names(dir), ['acks.jsonl', 'latest.json', 'notes', 'sft', 'step-4', 'step-5'])
    // Pruning again changes nothing.
    assert.deepEqual(pruneCheckpoints(dir, 2).removed, [])
  })

  it('pruneCheckpoints - keep 1 leaves only the latest; steps sort by number, not by name', () => {
    const dir = checkpointDir([2, 9, 10, 11], 11, [2, 9, 10, 11])
    assert.deepEqual(pruneCheckpoints(dir, 1), {
      removed: ['step-2', 'step-9', 'step-10'],
      kept: ['step-11'],
      failed: [],
    })
  })

  it('pruneCheckpoints - the checkpoint of the newest acknowledged version is kept beyond keep', () => {
    // latest.json points past the newest audit record (the learner died between the two writes).
    const dir = checkpointDir([1, 2, 3, 4], 4, [1, 2])
    assert.deepEqual(pruneCheckpoints(dir, 1), {
      removed: ['step-1', 'step-3'],
      kept: ['step-2', 'step-4'],
      failed: [],
    })
  })

  it('pruneCheckpoints - a checkpoint newer than latest.json is left alone; without latest.json nothing goes', () => {
    const dir = checkpointDir([1, 2, 3, 6], 3, [1, 2, 3])
    assert.deepEqual(pruneCheckpoints(dir, 1), {
      removed: ['step-1', 'step-2'],
      kept: ['step-3', 'step-6'],
      failed: [],
    })
    const none = checkpointDir([1, 2, 3])
    assert.deepEqual(pruneCheckpoints(none, 1), {
      removed: [],
      kept: ['step-1', 'step-2', 'step-3'],
      failed: [],
    })
    assert.deepEqual(names(none), ['acks.jsonl', 'notes', 'sft', 'step-1', 'step-2', 'step-3'])
  })

  it('pruneCheckpoints - keep below 1 or not an integer is a clear error and deletes nothing', () => {
    const dir = checkpointDir([1, 2], 2, [1, 2])
    for (const keep of [0, -1, 1.5, Number.NaN])
      assert.throws(
        () => pruneCheckpoints(dir, keep),
        (err: Error) =>
          err instanceof CheckpointPruneError &&
          err.message ===
            `cannot prune ${dir} to keep ${keep} checkpoint(s): keep must be an integer >= 1 (the latest is always kept)`,
      )
    assert.deepEqual(names(dir), ['acks.jsonl', 'latest.json', 'notes', 'sft', 'step-1', 'step-2'])
  })

  it('checkpointStep - the step of step-<n>, undefined for other names', () => {
    assert.deepEqual(['step-0', 'step-000012', 'step-', 'sft', 'step-3.tmp', 'xstep-1'].map(checkpointStep), [
      0,
      12,
      undefined,
      undefined,
      undefined,
      undefined,
    ])
  })
})
