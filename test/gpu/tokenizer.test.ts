import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { ConfigError, SpecialToken, TemplateError, Tokenizer } from '../../gpu/index.ts'

const tok = new Tokenizer()

describe('gpu/tokenizer', () => {
  it('tokenizer - vocabulary is 256 bytes plus the special tokens in order', () => {
    assert.equal(tok.vocabSize, 264)
    assert.equal(tok.padId, 256)
    assert.equal(tok.eosId, 257)
    assert.equal(tok.imStartId, 258)
    assert.equal(tok.imEndId, 259)
    assert.equal(tok.toolCallStartId, 260)
    assert.equal(tok.toolCallEndId, 261)
    assert.equal(tok.special('<think>'), 262)
    assert.throws(() => tok.special('<nope>'), TemplateError)
  })

  it('tokenizer - utf-8 text round-trips byte for byte', () => {
    const text = 'héllo, 世界 🎲\n\t"json": {}'
    const ids = tok.encode(text)
    assert.deepEqual([...ids], [...new TextEncoder().encode(text)])
    assert.equal(tok.decode(ids), text)
  })

  it('tokenizer - special strings are plain bytes unless allowed', () => {
    const text = `a${SpecialToken.ImEnd}b`
    assert.equal(tok.encode(text).length, 2 + SpecialToken.ImEnd.length)
    assert.deepEqual([...tok.encode(text, { allowSpecial: true })], [97, tok.imEndId, 98])
    assert.equal(tok.decode([97, tok.imEndId, 98]), text)
    assert.equal(tok.decode([97, tok.imEndId, 98], { skipSpecial: true }), 'ab')
  })

  it('tokenizer - invalid bytes and out-of-range ids decode to U+FFFD', () => {
    assert.equal(tok.decode([0xff, 97]), '\uFFFDa')
    assert.equal(tok.decode([97, 9999, -1]), 'a\uFFFD\uFFFD')
  })

  it('tokenizer - settings missing a required special token are rejected', () => {
    assert.throws(() => new Tokenizer({ kind: 'byte', specialTokens: ['<pad>'] }), ConfigError)
    assert.throws(
      () => new Tokenizer({ kind: 'byte', specialTokens: [...Object.values(SpecialToken), '<pad>'] }),
      /repeated special token/,
    )
    const extended = new Tokenizer({ kind: 'byte', specialTokens: [...Object.values(SpecialToken), '<x>'] })
    assert.equal(extended.vocabSize, 265)
  })
})
