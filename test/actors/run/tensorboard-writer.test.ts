import assert from 'node:assert/strict'
import { appendFileSync, mkdtempSync, readFileSync } from 'node:fs'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { TensorBoardWriter } from '../../../actors/index.ts'
import {
  fileVersionEvent,
  maskedCrc32c,
  scalarsEvent,
  tensorboardRunName,
  tfRecord,
} from '../../../actors/testing.ts'
import {
  crc32cBitwise,
  eventFiles,
  maskCrc,
  readEventFile,
  readTfRecords,
} from '../../support/tfevents-reader.ts'

const tmp = () => mkdtempSync(join(tmpdir(), 'triad-tb-'))

describe('actors/run/tensorboard-writer', () => {
  it('tfrecord - masked CRC-32C matches RFC 3720 and an independent bitwise CRC; the framing reads back', () => {
    // RFC 3720 B.4 check value of "123456789"
    assert.equal(crc32cBitwise(Buffer.from('123456789')), 0xe3069283)
    for (const text of ['', 'a', '123456789', 'x'.repeat(1000)]) {
      const data = Buffer.from(text)
      assert.equal(maskedCrc32c(data), maskCrc(crc32cBitwise(data)))
    }
    assert.equal(maskedCrc32c(Buffer.from('123456789')), maskCrc(0xe3069283))
    const record = tfRecord(Buffer.from('hello'))
    assert.equal(record.length, 5 + 16)
    assert.equal(record.readBigUInt64LE(0), 5n)
    assert.deepEqual(readTfRecords(Buffer.concat([record, tfRecord(Buffer.alloc(0))])), [
      Buffer.from('hello'),
      Buffer.alloc(0),
    ])
    const broken = Buffer.from(record)
    broken[14] ^= 1
    assert.throws(() => readTfRecords(broken), /data CRC mismatch/)
  })

  it('tf-event - the file_version event and a scalars event decode with protobufjs to their exact fields', () => {
    const dir = tmp()
    const f = join(dir, 'events.out.tfevents.test')
    appendFileSync(f, tfRecord(fileVersionEvent(1_700_000_000.25)))
    appendFileSync(
      f,
      tfRecord(
        scalarsEvent(1_700_000_001.5, 300, [
          ['loss/total', 0.1],
          ['rollout/success/calc', 1],
        ]),
      ),
    )
    appendFileSync(f, tfRecord(scalarsEvent(1_700_000_002, 0, [['sft/loss', 2.5]])))
    assert.deepEqual(readEventFile(f), [
      { wallTime: 1_700_000_000.25, step: 0, fileVersion: 'brain.Event:2', scalars: {} },
      {
        wallTime: 1_700_000_001.5,
        step: 300,
        scalars: { 'loss/total': Math.fround(0.1), 'rollout/success/calc': 1 },
      },
      { wallTime: 1_700_000_002, step: 0, scalars: { 'sft/loss': 2.5 } },
    ])
    // A step past 2^32 still round-trips (int64 varint).
    appendFileSync(f, tfRecord(scalarsEvent(1, 2 ** 40 + 3, [['k', 1]])))
    assert.equal(readEventFile(f).at(-1)!.step, 2 ** 40 + 3)
    assert.throws(() => scalarsEvent(1, -1, []), /non-negative integer, got -1/)
  })

  it('tensorboard-writer - one folder per reporter, one point per key and step (the last value), the SFT steps as SFT steps', () => {
    const dir = tmp()
    const w = new TensorBoardWriter({ dir, now: () => 1_700_000_000_000 })
    // The cold start: SFT steps 1 and 2 on the sft axis, then the learner's steps 0 and 1.
    w.write({ role: 'learner', id: '0', step: 1, axis: 'sft', time: 1_000, values: { 'sft/loss': 3 } })
    w.write({ role: 'learner', id: '0', step: 2, axis: 'sft', time: 2_000, values: { 'sft/loss': 2 } })
    w.write({ role: 'learner', id: '0', step: 0, time: 3_000, values: { 'reward_model/sft/steps': 40 } })
    w.write({ role: 'learner', id: '0', step: 1, time: 4_000, values: { 'loss/total': 0.5 } })
    // The rollout reports three times at step 1 (periodic reports between learner steps), then at 2.
    w.write({
      role: 'rollout',
      id: 'r-1',
      step: 1,
      time: 1_500,
      values: { 'rollout/success/calc': 0.25, x: 1 },
    })
    w.write({
      role: 'rollout',
      id: 'r-1',
      step: 1,
      time: 2_500,
      values: { 'rollout/success/calc': 0.5, y: Number.NaN },
    })
    w.write({ role: 'rollout', id: 'r-1', step: 1, time: 3_500, values: { 'rollout/success/calc': 0.75 } })
    w.write({ role: 'rollout', id: 'r-1', step: 2, time: 4_500, values: { 'rollout/success/calc': 1 } })
    // Two engines report the same key at one step: each in its own folder.
    w.write({ role: 'policy', id: 'fresh:0', step: 1, time: 1_000, values: { 'engine/tokens_per_s': 100 } })
    w.write({ role: 'policy', id: 'fresh:1', step: 1, time: 1_000, values: { 'engine/tokens_per_s': 200 } })
    w.close()
    w.write({ role: 'learner', id: '0', step: 9, time: 9_000, values: { late: 1 } })
    const files = eventFiles(dir)
    assert.equal(files.length, 4)
    const byRun = new Map(files.map((f) => [f.slice(0, f.lastIndexOf('/')), f]))
    assert.deepEqual([...byRun.keys()], ['learner/0', 'policy/fresh_0', 'policy/fresh_1', 'rollout/r-1'])
    for (const f of files)
      assert.match(
        f,
        new RegExp(
          `/events\\.out\\.tfevents\\.1700000000\\.${hostname().replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\.${process.pid}\\.\\d+$`,
        ),
      )
    const strip = (path: string) =>
      readEventFile(join(dir, path))
        .slice(1)
        .map((e) => [e.step, e.wallTime, e.scalars])
    assert.deepEqual(strip(byRun.get('learner/0')!), [
      [1, 1, { 'sft/loss': 3 }],
      [2, 2, { 'sft/loss': 2 }],
      [0, 3, { 'reward_model/sft/steps': 40 }],
      [1, 4, { 'loss/total': 0.5 }],
    ])
    assert.deepEqual(strip(byRun.get('rollout/r-1')!), [
      [1, 3.5, { 'rollout/success/calc': 0.75, x: 1 }],
      [2, 4.5, { 'rollout/success/calc': 1 }],
    ])
    assert.deepEqual(strip(byRun.get('policy/fresh_1')!), [[1, 1, { 'engine/tokens_per_s': 200 }]])
    const first = readEventFile(join(dir, byRun.get('policy/fresh_0')!))[0]!
    assert.deepEqual(first, { wallTime: 1_700_000_000, step: 0, fileVersion: 'brain.Event:2', scalars: {} })
    assert.ok(readFileSync(join(dir, byRun.get('policy/fresh_0')!)).length > 0)
  })

  it('tensorboard-writer - run names keep [A-Za-z0-9._-] of role and id', () => {
    assert.equal(tensorboardRunName('policy', 'fresh-0'), 'policy/fresh-0')
    assert.equal(tensorboardRunName('env adapter', 'a/b:c'), 'env_adapter/a_b_c')
    assert.equal(tensorboardRunName('', ''), '_/_')
  })
})
