import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  ConfigError,
  learnTaskTokenizer,
  renderChat,
  SpecialToken,
  TemplateError,
  Tokenizer,
} from '../../gpu/index.ts'
import { DEFAULT_TOKENIZER_SETTINGS, parseAssistant } from '../../gpu/testing.ts'
import type { ChatMessage } from '../../protocols/index.ts'

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

  describe('with byte-pair merges', () => {
    const corpus = [
      `${SpecialToken.ImStart}assistant\nGo west.${SpecialToken.ToolCallStart}{"name":"move","arguments":{"direction":"west"}}${SpecialToken.ToolCallEnd}${SpecialToken.ImEnd}\n`,
      `${SpecialToken.ImStart}tool\nat 2,0 héllo 世界世界 世界${SpecialToken.ImEnd}\n`,
      'Go east. Go south. Go north. SELECT name FROM people WHERE id = 3',
    ]
    const merged = learnTaskTokenizer([...corpus, ...corpus], 40)
    it('tokenizer - merges extend the vocabulary after the special tokens', () => {
      assert.equal(merged.firstMergeId, 264)
      assert.equal(merged.mergeCount, 40)
      assert.equal(merged.vocabSize, 304)
      assert.equal(merged.imEndId, tok.imEndId)
      assert.equal(merged.isSpecial(tok.imEndId), true)
      assert.equal(merged.isSpecial(264), false)
      assert.equal(merged.settings.merges?.length, 40)
      assert.equal('merges' in tok.settings, false) // the default settings (and tokenizer.json) are unchanged
      assert.ok(merged.encode('Go west.').length < tok.encode('Go west.').length)
    })

    it('tokenizer - merged encode/decode round-trips any string', () => {
      let seed = 3
      const next = () => {
        seed = (seed * 1103515245 + 12345) % 2 ** 31
        return seed
      }
      const pieces = [
        'Go',
        ' west',
        '.',
        'a',
        ' ',
        '\n',
        '{"',
        'name',
        '":',
        '7',
        'é',
        '世界',
        '🎲',
        '\uD800',
        '<|im_end|>',
        '<tool',
      ]
      for (let t = 0; t < 300; t++) {
        const text = Array.from({ length: next() % 30 }, () => pieces[next() % pieces.length]).join('')
        for (const allowSpecial of [false, true]) {
          const ids = merged.encode(text, { allowSpecial })
          // Same text as the byte-level tokenizer gives (a lone surrogate becomes U+FFFD in both).
          assert.equal(merged.decode(ids), tok.decode(tok.encode(text, { allowSpecial })))
          if (!text.includes('\uD800')) assert.equal(merged.decode(ids), text)
        }
      }
    })

    it('tokenizer - merged ids holding part of a character decode like their bytes, invalid ones as U+FFFD', () => {
      // Merges inside a character: 世 = E4 B8 96, 界 = E7 95 8C; merge 0 = E4 B8, merge 1 = (E4 B8) 96.
      const partial = new Tokenizer({
        ...DEFAULT_TOKENIZER_SETTINGS,
        merges: [
          [0xe4, 0xb8],
          [264, 0x96],
          [0x95, 0x8c],
        ],
      })
      const ids = partial.encode('世界丗 é')
      assert.deepEqual([...ids], [265, 0xe7, 266, 264, 0x97, 0x20, 0xc3, 0xa9])
      for (let k = 0; k <= ids.length; k++)
        for (let j = k; j <= ids.length; j++) {
          const slice = ids.slice(k, j)
          const expected = tok.decode(
            Array.from(slice).flatMap(
              (id) => ({ 264: [0xe4, 0xb8], 265: [0xe4, 0xb8, 0x96], 266: [0x95, 0x8c] })[id] ?? [id],
            ),
          )
          assert.equal(partial.decode(slice), expected)
        }
      assert.equal(partial.decode([264]), '\uFFFD')
      assert.equal(partial.decode([264, 0x96]), '世')
      const mergeId = merged.encode('west')[0]!
      assert.equal(merged.decode([0xff, mergeId, 9999]), `\uFFFD${merged.decode([mergeId])}\uFFFD`)
    })

    it('tokenizer - special tokens are never produced from plain text, and stay single ids', () => {
      const text = `${SpecialToken.ImStart}assistant\n${SpecialToken.ToolCallStart}{}${SpecialToken.ToolCallEnd}${SpecialToken.ImEnd}`
      const plain = merged.encode(text)
      assert.ok(plain.every((id) => !merged.isSpecial(id)))
      assert.equal(merged.decode(plain), text)
      const special = [...merged.encode(text, { allowSpecial: true })]
      assert.equal(special[0], merged.imStartId)
      assert.equal(special.at(-1), merged.imEndId)
      assert.equal(special.filter((id) => merged.isSpecial(id)).length, 4)
      assert.equal(merged.decode(special, { skipSpecial: true }), 'assistant\n{}')
    })

    it('tokenizer - the chat template renders with merges and parses back', () => {
      const messages: ChatMessage[] = [
        { role: 'user', content: 'Go west.' },
        {
          role: 'assistant',
          content: 'Go west.',
          tool_calls: [
            { id: 'call_0', type: 'function', function: { name: 'move', arguments: '{"direction":"west"}' } },
          ],
        },
      ]
      const byteChat = renderChat(tok, messages)
      const chat = renderChat(merged, messages)
      assert.ok(chat.ids.length < byteChat.ids.length)
      assert.equal(merged.decode(chat.ids), tok.decode(byteChat.ids))
      assert.equal(chat.ids.filter((id) => id === merged.toolCallStartId).length, 1)
      const assistantIds = chat.ids.filter((_, i) => chat.lossMask[i] === 1)
      const parsed = parseAssistant(merged.decode(assistantIds))
      assert.ok(parsed.ok)
      assert.deepEqual(parsed.message.tool_calls?.[0]?.function, {
        name: 'move',
        arguments: '{"direction":"west"}',
      })
    })

    it('tokenizer - learning the task tokenizer is deterministic and settings rebuild it', () => {
      assert.deepEqual(learnTaskTokenizer([...corpus, ...corpus], 40).settings, merged.settings)
      const copy = new Tokenizer(JSON.parse(JSON.stringify(merged.settings)))
      assert.deepEqual(
        [...copy.encode(corpus[0]!, { allowSpecial: true })],
        [...merged.encode(corpus[0]!, { allowSpecial: true })],
      )
      assert.equal(learnTaskTokenizer(corpus, 0).vocabSize, 264)
    })

    it('tokenizer - learning from byte-level ids splits at special ids only', () => {
      // The tools line holds "<tool_call>" as plain bytes: learned from ids it is plain text to merge;
      // learned from the decoded string it would be a boundary.
      const messages: ChatMessage[] = [
        { role: 'system', content: 'Call: <tool_call>{..}</tool_call>' },
        { role: 'user', content: 'Go west.' },
      ]
      const ids = renderChat(tok, messages).ids
      const fromIds = learnTaskTokenizer([ids, ids, ids], 200)
      const fromText = learnTaskTokenizer(Array(3).fill(tok.decode(ids)), 200)
      const system = renderChat(fromIds, messages.slice(0, 1)).ids
      assert.ok(system.length < renderChat(fromText, messages.slice(0, 1)).ids.length)
      assert.equal(fromIds.decode(system), tok.decode(renderChat(tok, messages.slice(0, 1)).ids))
      // No merge spans a special id: the special ids stay single and in place.
      assert.deepEqual(
        [...renderChat(fromIds, messages).ids].filter((id) => fromIds.isSpecial(id)),
        [...ids].filter((id) => tok.isSpecial(id)),
      )
    })

    it('tokenizer - malformed merges in settings are rejected', () => {
      const base = DEFAULT_TOKENIZER_SETTINGS
      assert.throws(() => new Tokenizer({ ...base, merges: [[97, tok.imEndId]] }), /not a byte/)
      assert.throws(() => new Tokenizer({ ...base, merges: [[97, 264]] }), ConfigError)
      assert.throws(() => new Tokenizer({ ...base, merges: 'x' as unknown as [] }), ConfigError)
    })
  })
})
