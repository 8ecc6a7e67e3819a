import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError } from '../../gpu/index.ts'
import {
  BytePairEncoding,
  learnMerges,
  MAX_CHUNK_BYTES,
  splitChunks,
  splitOnSeparators,
} from '../../gpu/testing.ts'

const F = 264 // first merge id after the default special tokens
const a = 97
const b = 98
const sp = 32

const encode = (bpe: BytePairEncoding, text: string) => {
  const out: number[] = []
  bpe.encodeText(text, out)
  return out
}

describe('gpu/bpe', () => {
  it('bpe - chunks: optional space plus letters or punctuation, single digits, whitespace runs', () => {
    assert.deepEqual(splitChunks('Go west.<tool_call>{"x":12}  ok\n\nhé_llo'), [
      'Go',
      ' west',
      '.<',
      'tool_call',
      '>{"',
      'x',
      '":',
      '1',
      '2',
      '}',
      ' ',
      ' ok',
      '\n',
      '\n',
      'hé_llo',
    ])
    assert.deepEqual(splitChunks(''), [])
  })

  it('bpe - chunks concatenate to the text for any string, lone surrogates included', () => {
    let seed = 7
    const next = () => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31
      return seed
    }
    const alphabet = [
      'a',
      'Z',
      '_',
      '0',
      '9',
      ' ',
      '\n',
      '\t',
      '{',
      '"',
      'é',
      '世',
      '🎲',
      '\uD800',
      '\uDC00',
      '\u00A0',
      '\u3000',
    ]
    for (let t = 0; t < 300; t++) {
      const text = Array.from({ length: next() % 40 }, () => alphabet[next() % alphabet.length]).join('')
      assert.equal(splitChunks(text).join(''), text)
    }
  })

  it('bpe - separators split the text and are dropped, longest first', () => {
    assert.deepEqual(splitOnSeparators('x<a>y<ab>z<a><a>', ['<a>', '<ab>']), ['x', 'y', 'z'])
    assert.deepEqual(splitOnSeparators('plain', []), ['plain'])
  })

  it('bpe - learning reproduces a hand-worked example, ties to the smallest pair', () => {
    // Chunks of "aa ab ab": "aa" x1, " ab" x2. Pair counts: (a,a)=1, (' ',a)=2, (a,b)=2.
    // Tie at 2: (' ',a)=(32,97) < (97,98) -> merge 0 = [32,97] = id F.
    // Then words [a,a] x1, [F,b] x2: (F,b)=2 -> merge 1 = [F,98] = id F+1.
    // Then [a,a] x1 only: count 1 < minCount 2 -> stop; with minCount 1 -> merge 2 = [97,97].
    assert.deepEqual(learnMerges(['aa ab ab'], { merges: 10, firstId: F }), [
      [sp, a],
      [F, b],
    ])
    const all = learnMerges(['aa ab ab'], { merges: 10, firstId: F, minCount: 1 })
    assert.deepEqual(all, [
      [sp, a],
      [F, b],
      [a, a],
    ])
    assert.deepEqual(learnMerges(['aa ab ab'], { merges: 1, firstId: F }), [[sp, a]])
    const bpe = new BytePairEncoding(all, F)
    // Chunks " ab" and " aa": " aa" takes (' ',a) first (rank 0 beats rank 2).
    assert.deepEqual(encode(bpe, ' ab aa'), [F + 1, F, a])
    assert.deepEqual(encode(bpe, 'aa'), [F + 2])
    assert.deepEqual(encode(bpe, 'ab'), [a, b])
  })

  it('bpe - overlapping pairs count each time and merge left to right', () => {
    // "aaaa": (a,a) counted 3 times -> [X,X]; then (X,X) once.
    const merges = learnMerges(['aaaa'], { merges: 5, firstId: F, minCount: 1 })
    assert.deepEqual(merges, [
      [a, a],
      [F, F],
    ])
    const bpe = new BytePairEncoding(merges, F)
    assert.deepEqual(encode(bpe, 'aaa'), [F, a])
    assert.deepEqual(encode(bpe, 'aaaaa'), [F + 1, a])
  })

  it('bpe - merges never cross chunks or separators', () => {
    const merges = learnMerges(['a.a.a.', 'x<s>y', 'x<s>y'], { merges: 50, firstId: F, separators: ['<s>'] })
    for (const [l, r] of merges) {
      const bytes = [l, r].filter((id) => id < 256)
      assert.ok(!bytes.includes('<'.charCodeAt(0)), `merge ${l},${r} touches a separator`)
    }
    // "a" and "." are different chunks, so no (a,'.') pair is ever counted.
    assert.ok(!merges.some(([l, r]) => l === a && r === 46))
  })

  it('bpe - encoding applies the lowest-ranked pair first', () => {
    // Ranks: (b,c) before (a,b). "abc" -> [a, bc]; with the order reversed -> [ab, c].
    const c = 99
    assert.deepEqual(
      encode(
        new BytePairEncoding(
          [
            [b, c],
            [a, b],
          ],
          F,
        ),
        'abc',
      ),
      [a, F],
    )
    assert.deepEqual(
      encode(
        new BytePairEncoding(
          [
            [a, b],
            [b, c],
          ],
          F,
        ),
        'abc',
      ),
      [F, c],
    )
  })

  it('bpe - long chunks are cut into pieces and still round-trip', () => {
    const text = 'x'.repeat(MAX_CHUNK_BYTES * 2 + 3)
    const merges = learnMerges([text], { merges: 20, firstId: F })
    const bpe = new BytePairEncoding(merges, F)
    const ids = encode(bpe, text)
    const bytes = ids.flatMap((id) => (id < 256 ? [id] : [...bpe.bytesOf(id)!]))
    assert.equal(String.fromCharCode(...bytes), text)
    assert.ok(ids.length < text.length / 8)
  })

  it('bpe - learning is deterministic', () => {
    const texts = ['the cat sat on the mat', 'the hat; the bat: 12 34', '{"name":"move"}']
    assert.deepEqual(
      learnMerges(texts, { merges: 30, firstId: F }),
      learnMerges(texts, { merges: 30, firstId: F }),
    )
  })

  it('bpe - malformed merges are rejected with ConfigError', () => {
    assert.throws(() => new BytePairEncoding([[a, 256]], F), /not a byte .* or an earlier merge/)
    assert.throws(() => new BytePairEncoding([[a, F]], F), ConfigError) // refers to itself
    assert.throws(
      () =>
        new BytePairEncoding(
          [
            [a, F + 1],
            [a, b],
          ],
          F,
        ),
      ConfigError,
    ) // a later merge
    assert.throws(
      () =>
        new BytePairEncoding(
          [
            [a, b],
            [a, b],
          ],
          F,
        ),
      /repeats merges\[0\]/,
    )
    assert.throws(() => new BytePairEncoding([[a, 1.5]], F), ConfigError)
    assert.throws(() => new BytePairEncoding([[a] as unknown as [number, number]], F), /must be a pair/)
    assert.throws(() => new BytePairEncoding([], 100), ConfigError)
    assert.throws(() => learnMerges(['x'], { merges: -1, firstId: F }), ConfigError)
    assert.throws(() => learnMerges(['x'], { merges: 1, firstId: 10 }), ConfigError)
  })
})
