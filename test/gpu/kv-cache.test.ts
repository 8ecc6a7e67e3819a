import assert from 'node:assert/strict'
import { before, describe, it } from 'node:test'
import * as tf from '@tensorflow/tfjs'
import { chooseBackend } from '../../gpu/backend.ts'
import { KV_CACHE_CHUNK, KvCache, RaggedKvCache } from '../../gpu/kv-cache.ts'
import { useTestBackend } from '../support/test-backend.ts'

/** `[rows*heads, steps, 1]` keys whose value is `base + column`, one head per row. */
const keys = (rows: number, steps: number, base: number) =>
  tf.tensor3d(
    Array.from({ length: rows * steps }, (_, i) => base + (i % steps)),
    [rows, steps, 1],
  )

describe('gpu/kv-cache', () => {
  before(async () => {
    await useTestBackend()
  })

  it('kv-cache - a plain cache keeps no key mask while every token is real; alwaysMask keeps one', () => {
    const plain = new KvCache(1, 2)
    assert.equal(plain.extendKeyMask(undefined, 3), undefined)
    const masked = new KvCache(1, 2, { alwaysMask: true })
    assert.deepEqual(masked.extendKeyMask(undefined, 3)?.arraySync(), [
      [1, 1, 1],
      [1, 1, 1],
    ])
    plain.dispose()
    masked.dispose()
  })

  it('kv-cache - ragged: rows join right-aligned and leave, batch follows, a row copies out its real columns', () => {
    // a prefill of 1 row of 2 tokens, then one of 2 rows of 3 tokens (the second row's first is padding)
    const a = new RaggedKvCache(1, 1)
    a.batch = 1
    a.append(0, keys(1, 2, 10), keys(1, 2, 20))
    a.extendKeyMask(undefined, 2)
    a.advance(2)
    const b = new RaggedKvCache(1, 1)
    b.batch = 2
    b.append(0, keys(2, 3, 30), keys(2, 3, 40))
    b.extendKeyMask(tf.tensor2d([1, 1, 1, 0, 1, 1], [2, 3]), 3)
    b.advance(3)
    const cohort = new RaggedKvCache(1, 1)
    cohort.merge(a)
    assert.equal(cohort.batch, 1)
    cohort.merge(b)
    assert.equal(cohort.batch, 3)
    assert.equal(cohort.length, 3)
    // the shorter row is left-padded: its column 0 is masked
    const row = cohort.extractRow(0, 2)!
    assert.deepEqual(row.keys[0]!.arraySync(), [[[10], [11]]])
    assert.equal(cohort.extractRow(2, 3), undefined, 'row 2 has 2 real tokens, not 3')
    assert.deepEqual(cohort.extractRow(2, 2)!.values[0]!.arraySync(), [[[41], [42]]])
    // rows 0 and 2 stay; the leading column is padding in both and goes
    cohort.select([0, 2], 2)
    assert.equal(cohort.batch, 2)
    assert.equal(cohort.length, 2)
    assert.deepEqual(cohort.extractRow(1, 2)!.keys[0]!.arraySync(), [[[31], [32]]])
    cohort.dispose()
  })

  it('kv-cache - ragged: a prefill cache from cached prefixes holds each prefix right-aligned, the rest masked', () => {
    const prefix = {
      tokens: Int32Array.of(5, 6),
      keys: [keys(1, 2, 50)],
      values: [keys(1, 2, 60)],
      lastUsed: 0,
    }
    const c = RaggedKvCache.fromPrefixes(1, 1, [prefix, undefined])
    assert.equal(c.batch, 2)
    assert.equal(c.length, 2)
    assert.deepEqual(c.extractRow(0, 2)!.keys[0]!.arraySync(), [[[50], [51]]])
    assert.equal(c.extractRow(1, 1), undefined)
    const none = RaggedKvCache.fromPrefixes(1, 1, [undefined, undefined, undefined])
    assert.equal(none.batch, 3)
    assert.equal(none.length, 0)
    c.dispose()
    prefix.keys[0]!.dispose()
    prefix.values[0]!.dispose()
  })

  for (const backend of ['native', 'cpu'] as const) {
    const inPlace = backend === 'native'
    it(`kv-cache - on ${backend}, appends ${inPlace ? `write in place into chunks of ${KV_CACHE_CHUNK} columns, grown when full` : 'concatenate (capacity = length)'}, and keep every key`, async () => {
      if (backend === 'native') await chooseBackend({ backend, log: () => {} })
      else await tf.setBackend(backend)
      const cache = new KvCache(1, 2)
      const steps = KV_CACHE_CHUNK + 6
      let last: tf.Tensor3D | undefined
      // a 4-token prefill, then one token a step; the key of token i is i in both rows
      for (let at = 0; at < steps; ) {
        const n = at === 0 ? 4 : 1
        const columns = inPlace ? Math.ceil((at + n) / KV_CACHE_CHUNK) * KV_CACHE_CHUNK : at + n
        assert.equal(cache.keyLength(n), columns, `keyLength after ${at} tokens`)
        const k = keys(2, n, at)
        ;[last] = cache.append(0, k, k)
        k.dispose()
        cache.advance(n)
        assert.equal(last.shape[1], columns, `columns after ${at + n} tokens`)
        assert.equal(cache.capacity, columns)
        at += n
      }
      const want = Array.from({ length: last!.shape[1] }, (_, i) => [i < steps ? i : 0])
      assert.deepEqual(last!.arraySync(), [want, want])
      cache.dispose()
      await useTestBackend()
    })
  }

  it('kv-cache - ragged: a cache grown in place is cut to its length before rows leave', async () => {
    await chooseBackend({ backend: 'native', log: () => {} })
    const cache = new RaggedKvCache(1, 1)
    cache.batch = 2
    const k = keys(2, 3, 0)
    cache.append(0, k, k)
    cache.extendKeyMask(tf.tensor2d([1, 1, 1, 0, 1, 1], [2, 3]), 3)
    cache.advance(3)
    assert.equal(cache.capacity, KV_CACHE_CHUNK)
    cache.select([1], 2)
    assert.equal(cache.capacity, 2)
    assert.deepEqual(cache.extractRow(0, 2)!.keys[0]!.arraySync(), [[[1], [2]]])
    cache.dispose()
    k.dispose()
    await useTestBackend()
  })
})
