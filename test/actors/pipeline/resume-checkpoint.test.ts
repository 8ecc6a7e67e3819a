import assert from 'node:assert/strict'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import type { PipelineCheckpoint } from '../../../actors/index.ts'
import {
  NoReadableCheckpointError,
  restoreNewestCheckpoint,
  resumeCandidates,
} from '../../../actors/testing.ts'

/**
 * A checkpoint directory with `step-<n>/` for each step (each holding `weights`, `ok` or anything
 * else for a broken one), `latest.json` naming `latest` (raw text when a string), and the ack audit.
 */
function checkpoints(steps: Record<number, string>, latest?: number | string): string {
  const dir = mkdtempSync(join(tmpdir(), 'triad-resume-'))
  for (const [step, weights] of Object.entries(steps)) {
    mkdirSync(join(dir, `step-${step}`))
    writeFileSync(join(dir, `step-${step}`, 'weights'), weights)
  }
  mkdirSync(join(dir, 'sft'))
  const acks = Object.keys(steps).map((s) => ({
    version: Number(s),
    used: [Number(s) * 10],
    dropped: [],
    duplicates: [],
  }))
  writeFileSync(join(dir, 'acks.jsonl'), acks.map((r) => `${JSON.stringify(r)}\n`).join(''))
  if (typeof latest === 'number')
    writeFileSync(
      join(dir, 'latest.json'),
      JSON.stringify({ version: latest, usedSeqs: [latest * 10], dir: `/elsewhere/step-${latest}` }),
    )
  else if (typeof latest === 'string') writeFileSync(join(dir, 'latest.json'), latest)
  return dir
}

/** A restore that reads `weights` and throws (naming the file) unless it says `ok`. */
function restorer() {
  const tried: number[] = []
  const restore = async (c: PipelineCheckpoint) => {
    tried.push(c.version)
    const file = join(c.dir, 'weights')
    const text = readFileSync(file, 'utf8')
    if (text !== 'ok') throw new Error(`${file}: file too short (${text.length} bytes)\n    at load`)
  }
  return { tried, restore }
}

describe('actors/pipeline/resume-checkpoint', () => {
  it('resumeCandidates - the latest, then the older step checkpoints newest first with their used groups; none newer than latest.json; none without latest.json', () => {
    const dir = checkpoints({ 2: 'ok', 4: 'ok', 5: 'ok', 6: 'ok' }, 5)
    try {
      assert.deepEqual(resumeCandidates(dir), {
        candidates: [
          { version: 5, usedSeqs: [50], dir: join(dir, 'step-5') },
          { version: 4, usedSeqs: [40], dir: join(dir, 'step-4') },
          { version: 2, usedSeqs: [20], dir: join(dir, 'step-2') },
        ],
      })
      rmSync(join(dir, 'latest.json'))
      assert.deepEqual(resumeCandidates(dir), { candidates: [] })
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('restoreNewestCheckpoint - the latest when it reads; nothing to restore without latest.json', async () => {
    const dir = checkpoints({ 1: 'ok', 2: 'ok' }, 2)
    try {
      const lines: string[] = []
      const r = restorer()
      assert.deepEqual(await restoreNewestCheckpoint(dir, r.restore, (l) => lines.push(l)), {
        version: 2,
        usedSeqs: [20],
        dir: join(dir, 'step-2'),
      })
      assert.deepEqual(r.tried, [2])
      assert.equal(lines.length, 0, lines.join('\n'))
      rmSync(join(dir, 'latest.json'))
      assert.equal(await restoreNewestCheckpoint(dir, r.restore, (l) => lines.push(l)), undefined)
      assert.deepEqual(r.tried, [2], 'restore not called')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('restoreNewestCheckpoint - an unreadable latest is skipped with a line naming it and why; the one before is restored and the bad one left in place', async () => {
    const dir = checkpoints({ 3: 'ok', 4: '', 5: 'trunc' }, 5)
    try {
      const lines: string[] = []
      const r = restorer()
      const restored = await restoreNewestCheckpoint(dir, r.restore, (l) => lines.push(l))
      assert.deepEqual(restored, { version: 3, usedSeqs: [30], dir: join(dir, 'step-3') })
      assert.deepEqual(r.tried, [5, 4, 3])
      assert.deepEqual(lines, [
        `skipping step-5: it cannot be read (${join(dir, 'step-5', 'weights')}: file too short (5 bytes)); trying step-4`,
        `skipping step-4: it cannot be read (${join(dir, 'step-4', 'weights')}: file too short (0 bytes)); trying step-3`,
      ])
      assert.equal(readFileSync(join(dir, 'step-5', 'weights'), 'utf8'), 'trunc', 'nothing deleted')
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('restoreNewestCheckpoint - none readable: NoReadableCheckpointError, not restartable, one line naming every file; never the SFT', async () => {
    const dir = checkpoints({ 4: '', 5: 'x' }, 5)
    try {
      const lines: string[] = []
      const r = restorer()
      const err = await restoreNewestCheckpoint(dir, r.restore, (l) => lines.push(l)).then(
        () => assert.fail('restored'),
        (e: unknown) => e,
      )
      assert.ok(err instanceof NoReadableCheckpointError)
      assert.equal(err.restartable, false)
      assert.equal(
        err.message,
        `no step checkpoint in ${dir} can be read, so the run cannot resume: step-5: ${join(dir, 'step-5', 'weights')}: file too short (1 bytes); step-4: ${join(dir, 'step-4', 'weights')}: file too short (0 bytes)`,
      )
      assert.deepEqual(r.tried, [5, 4])
      assert.equal(lines.at(-1)?.endsWith('no older step checkpoint is left'), true, lines.join('\n'))
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it('restoreNewestCheckpoint - a latest.json that does not parse is skipped, saying so; every step checkpoint is a candidate', async () => {
    const dir = checkpoints({ 6: 'ok', 7: 'bad' }, '{"version": 7, "us')
    try {
      const lines: string[] = []
      const r = restorer()
      assert.equal((await restoreNewestCheckpoint(dir, r.restore, (l) => lines.push(l)))?.version, 6)
      assert.deepEqual(r.tried, [7, 6])
      assert.match(
        lines[0]!,
        new RegExp(
          `^skipping latest\\.json: it cannot be read \\(${join(dir, 'latest.json')}: .+\\); trying the step checkpoints newest first$`,
        ),
      )
      // Nothing readable at all: the error names latest.json first.
      rmSync(join(dir, 'step-6'), { recursive: true })
      rmSync(join(dir, 'step-7'), { recursive: true })
      await assert.rejects(
        restoreNewestCheckpoint(dir, r.restore, () => {}),
        (e: Error) => {
          assert.ok(e instanceof NoReadableCheckpointError)
          assert.match(
            e.message,
            new RegExp(`can be read, so the run cannot resume: latest\\.json: ${join(dir, 'latest.json')}: `),
          )
          return true
        },
      )
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
