import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readFileSync, statSync, truncateSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { parquetReadObjects } from 'hyparquet'
import {
  createRunDir,
  getTask,
  InProcessTransport,
  readTrajectoryLog,
  TRAJECTORY_LOG_FILE,
} from '../../actors/index.ts'
import {
  appendTrajectoryLog,
  ensureTrajectoryStream,
  type LearnerCore,
  LearnerLoop,
  openTrajectoryConsumer,
  openTrajectoryPublisher,
} from '../../actors/testing.ts'
import { runTrajectories } from '../../bin/commands/trajectories.ts'
import type { TrajectoryRow } from '../../bin/trajectories/trajectory-rows.ts'
import type { TrajectoryGroupPayload } from '../../protocols/index.ts'
import { assertOpenAiConversation } from '../support/openai-chat-schema.ts'
import { runTriad } from '../support/triad-process.ts'

/** A calc group of two one-turn samples generated at `version`, with their chat messages. */
function group(id: string, version: number): TrajectoryGroupPayload {
  return {
    group_id: id,
    task: 'calc',
    index: 7,
    // An instance seed is a 32-bit unsigned hash (hashSeed): above int32's range half the time.
    seed: 3_000_000_000,
    difficulty: 2,
    started_version: version,
    samples: [0, 1].map((reward) => ({
      tokens: Int32Array.from([5, 6, 7, 8, 9]),
      loss_mask: Uint8Array.from([0, 0, 1, 1, 0]),
      logprobs: Float32Array.from([0, 0, -0.1, -2.7, 0]),
      versions: Int32Array.from([-1, -1, version, version, -1]),
      turn_starts: Int32Array.from([2]),
      reward,
      status: reward ? ('completed' as const) : ('turn_limit' as const),
      turns: 1,
      metrics: { success: reward, 'step_good/0': 1, turn: 2, turns: 2 },
      stale_turns: reward,
      messages: [
        { role: 'user' as const, content: `compute ${id}` },
        // A turn without a tool call, answered as runs made before the environment's user-message
        // answer logged it: a tool message with no call.
        { role: 'assistant' as const, content: 'thinking' },
        { role: 'tool' as const, tool_call_id: 'none', content: 'error: no tool call; call one of: add' },
        {
          role: 'assistant' as const,
          content: null,
          tool_calls: [
            { id: 'c0', type: 'function' as const, function: { name: 'add', arguments: '{"a":1,"b":2}' } },
          ],
        },
        { role: 'tool' as const, content: '3', tool_call_id: 'c0' },
      ],
    })),
  }
}

/** A learner core without tensors: a step increments the version. */
function countingCore(): LearnerCore {
  let version = 0
  return {
    get version() {
      return version
    },
    step: async () => {
      version++
      return {}
    },
    weights: async () => ({}),
    saveCheckpoint: async () => {},
  }
}

/** A run directory whose learner loop trained 3 steps of one group each on the in-process stream. */
async function trainedRun(): Promise<{ path: string; groups: TrajectoryGroupPayload[] }> {
  const dir = await createRunDir({
    runsDir: mkdtempSync(join(tmpdir(), 'triad-traj-')),
    name: 't',
    recipe: { name: 't' },
  })
  const t = new InProcessTransport()
  try {
    const run = 'traj'
    await ensureTrajectoryStream(t, { run, maxGroups: 10 })
    const pub = openTrajectoryPublisher(t, run)
    const groups = [group('g0', 0), group('g1', 0), group('g2', 1)]
    for (const g of groups) await pub.publish(g)
    const loop = new LearnerLoop(
      countingCore(),
      await openTrajectoryConsumer(t, run),
      {
        minBatchGroups: 1,
        maxBatchGroups: 1,
        stalenessBound: 100,
        checkpointEvery: 2,
        checkpointDir: dir.checkpointsDir,
        waitMs: 1_000,
        trajectoryLog: join(dir.path, TRAJECTORY_LOG_FILE),
      },
      async () => {},
      () => {},
    )
    await loop.run(3)
    return { path: dir.path, groups }
  } finally {
    await t.close()
  }
}

/** The rows `triad trajectories` must write for `groups` trained at steps 1, 2, 3 in order. */
function expectedRows(run: string, groups: TrajectoryGroupPayload[]): TrajectoryRow[] {
  const tools = [...getTask('calc').tools]
  return groups.flatMap((g, k) =>
    g.samples.map((s, i) => ({
      run,
      task: 'calc',
      group_id: g.group_id,
      group_seq: k + 1,
      sample: i,
      index: 7,
      seed: 3_000_000_000,
      difficulty: 2,
      started_version: g.started_version,
      trained_step: k + 1,
      reward: s.reward,
      status: s.status,
      turns: 1,
      stale_turns: s.stale_turns,
      // One name for the turn count; the tool message without its call is the user turn it stands for.
      metrics: { success: s.reward, 'step_good/0': 1, turns: 2 },
      messages: s.messages!.map((m) =>
        m.role === 'tool' && m.tool_call_id === 'none' ? { role: 'user' as const, content: m.content } : m,
      ),
      tools,
      input_ids: [5, 6, 7, 8, 9],
      loss_mask: [0, 0, 1, 1, 0],
      logprobs: Array.from(Float32Array.from([0, 0, -0.1, -2.7, 0])),
      versions: [-1, -1, g.started_version, g.started_version, -1],
      turn_starts: [2],
    })),
  )
}

describe('bin/trajectories', () => {
  it('the learner loop logs every group it trains on with its step; JSONL and parquet exports give exactly those episodes', async () => {
    const { path, groups } = await trainedRun()
    const log = readTrajectoryLog(join(path, TRAJECTORY_LOG_FILE))
    assert.equal(log.truncated, false)
    assert.deepEqual(
      log.records.map((r) => [r.seq, r.step, r.group.group_id]),
      [
        [1, 1, 'g0'],
        [2, 2, 'g1'],
        [3, 3, 'g2'],
      ],
    )
    assert.deepEqual(
      log.records.map((r) => r.group),
      groups,
    )
    const run = path.split('/').at(-1)!
    const want = expectedRows(run, groups)

    const jsonl = join(path, 'out.jsonl')
    assert.equal(await runTrajectories(path, { out: jsonl }), 6)
    const lines = readFileSync(jsonl, 'utf8').trimEnd().split('\n')
    assert.deepEqual(
      lines.map((l) => JSON.parse(l)),
      want,
    )
    for (const [i, l] of lines.entries()) {
      const r = JSON.parse(l) as TrajectoryRow
      assertOpenAiConversation(r.messages, r.tools, `row ${i}`)
    }

    const parquet = join(path, 'out.parquet')
    assert.equal(await runTrajectories(path, { out: parquet }), 6)
    const bytes = readFileSync(parquet)
    const rows = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength),
    })
    assert.deepEqual(
      rows.map((r) => ({ ...r, group_seq: Number(r.group_seq), seed: Number(r.seed) })),
      want,
    )
    assert.equal(typeof rows[0]!.group_seq, 'bigint')
    assert.equal(typeof rows[0]!.seed, 'bigint')
  })

  it('readTrajectoryLog - a group trained again after a lost step is given once, at its last step; a cut record is left out', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'triad-traj-log-')), TRAJECTORY_LOG_FILE)
    const g = (id: string, seq: number) => ({ seq, redeliveries: 0, group: group(id, 0) })
    appendTrajectoryLog(file, [g('a', 1), g('b', 2)], 1)
    appendTrajectoryLog(file, [g('b', 2)], 4)
    // A resumed one-process run numbers its new stream from 1 again: another group with seq 1.
    appendTrajectoryLog(file, [{ seq: 1, redeliveries: 0, group: group('a2', 3) }], 4)
    const whole = statSync(file).size
    appendTrajectoryLog(file, [g('c', 3)], 5)
    truncateSync(file, whole + 10)
    const log = readTrajectoryLog(file)
    assert.equal(log.truncated, true)
    assert.deepEqual(
      log.records.map((r) => [r.group.group_id, r.step]),
      [
        ['a', 1],
        ['b', 4],
        ['a2', 4],
      ],
    )
  })

  it('readTrajectoryLog - a whole record that does not decode fails naming the file and the record', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'triad-traj-log-')), TRAJECTORY_LOG_FILE)
    appendTrajectoryLog(file, [{ seq: 1, redeliveries: 0, group: group('a', 0) }], 1)
    appendFileSync(file, Buffer.from([3, 0, 0, 0, 0xc1, 0xc1, 0xc1]))
    assert.throws(() => readTrajectoryLog(file), {
      name: 'TrajectoryLogError',
      message: new RegExp(`^trajectory log ${file}: record 1 \\(byte \\d+\\) does not decode: `),
    })
  })

  it('triad trajectories - no --out or an unknown extension exit 2; a run without a log exits 1 and says so', async () => {
    const dir = await createRunDir({
      runsDir: mkdtempSync(join(tmpdir(), 'triad-traj-')),
      name: 'e',
      recipe: { name: 'e' },
    })
    const noOut = await runTriad(['trajectories', dir.path])
    assert.equal(noOut.code, 2)
    assert.equal(noOut.stderr, 'triad: --out FILE is required (FILE.jsonl or FILE.parquet)\n')
    await assert.rejects(runTrajectories(dir.path, { out: join(dir.path, 'x.csv') }), {
      name: 'UsageError',
      message: `--out ${join(dir.path, 'x.csv')}: cannot tell the format from the extension; name the file .jsonl or .parquet, or give --format`,
    })
    await assert.rejects(runTrajectories(dir.path, { out: 'x.jsonl', format: 'csv' }), {
      name: 'UsageError',
      message: "--format must be one of jsonl, parquet (got 'csv')",
    })
    const none = await runTriad(['trajectories', dir.path, '--out', join(dir.path, 'x.jsonl')])
    assert.equal(none.code, 1)
    assert.equal(
      none.stderr,
      `triad: run ${dir.id} has no trajectory log (${join(dir.path, TRAJECTORY_LOG_FILE)}): it took no RL step yet, or was made before triad kept one\n`,
    )
  })
})
