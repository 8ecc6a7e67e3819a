import assert from 'node:assert/strict'
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, describe, it } from 'node:test'
import { CheckpointError, loadJinjaChatFormat, loadPretrainedTokenizer } from '../../gpu/index.ts'
import { QWEN3_TOKENIZER_DIR } from '../support/qwen3-tokenizer.ts'

const qwen = loadPretrainedTokenizer(QWEN3_TOKENIZER_DIR)

describe('gpu/pretrained-tokenizer - the real Qwen3 tokenizer', () => {
  it('pretrained-tokenizer - special tokens encode to their single Qwen3 ids and decode back', () => {
    const known: [string, number][] = [
      ['<|endoftext|>', 151643],
      ['<|im_start|>', 151644],
      ['<|im_end|>', 151645],
      ['<tool_call>', 151657],
      ['</tool_call>', 151658],
      ['<tool_response>', 151665],
      ['<think>', 151667],
      ['</think>', 151668],
    ]
    for (const [token, id] of known) {
      assert.deepEqual([...qwen.encode(token)], [id], token)
      assert.equal(qwen.decode([id]), token)
      assert.equal(qwen.tokenId(token), id)
    }
  })

  it('pretrained-tokenizer - known text encodes to known ids (byte-level BPE), no BOS/EOS added, and decodes back', () => {
    assert.deepEqual([...qwen.encode('Hello world')], [9707, 1879])
    assert.deepEqual([...qwen.encode('Hello, world! 你好')], [9707, 11, 1879, 0, 220, 108386])
    const turn = '<|im_start|>user\nHello world<|im_end|>\n'
    const ids = qwen.encode(turn)
    assert.equal(ids[0], 151644)
    assert.equal(ids[ids.length - 2], 151645)
    assert.equal(qwen.decode(ids), turn)
    assert.equal(qwen.decode(ids, { skipSpecial: true }), 'user\nHello world\n')
  })

  it('pretrained-tokenizer - vocabulary size and the special ids of tokenizer_config.json', () => {
    assert.equal(qwen.vocabSize, 151669)
    assert.equal(qwen.eosId, 151645)
    assert.equal(qwen.padId, 151643)
  })
})

describe('gpu/pretrained-tokenizer - bad input', () => {
  const dirs: string[] = []
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  })
  /** A copy of the Qwen3 tokenizer directory with `config` as its tokenizer_config.json. */
  function withConfig(config: Record<string, unknown> | string): string {
    const dir = mkdtempSync(join(tmpdir(), 'triad-tok-'))
    dirs.push(dir)
    copyFileSync(join(QWEN3_TOKENIZER_DIR, 'tokenizer.json'), join(dir, 'tokenizer.json'))
    writeFileSync(
      join(dir, 'tokenizer_config.json'),
      typeof config === 'string' ? config : JSON.stringify(config),
    )
    return dir
  }
  const qwenConfig = JSON.parse(
    readFileSync(join(QWEN3_TOKENIZER_DIR, 'tokenizer_config.json'), 'utf8'),
  ) as Record<string, unknown>

  it('pretrained-tokenizer - a directory without tokenizer.json: one line naming the file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-tok-'))
    dirs.push(dir)
    assert.throws(
      () => loadPretrainedTokenizer(dir),
      (err: Error) =>
        err instanceof CheckpointError &&
        err.message === `${join(dir, 'tokenizer.json')}: cannot read (ENOENT)` &&
        !err.message.includes('\n'),
    )
  })

  it('pretrained-tokenizer - a tokenizer_config.json that is not JSON names the file', () => {
    const dir = withConfig('{ not json')
    assert.throws(
      () => loadPretrainedTokenizer(dir),
      (err: Error) =>
        err instanceof CheckpointError && err.message === `${join(dir, 'tokenizer_config.json')}: not JSON`,
    )
  })

  it('pretrained-tokenizer - an eos_token the vocabulary lacks names the field and the file', () => {
    const dir = withConfig({ ...qwenConfig, eos_token: '<|nope|>' })
    assert.throws(
      () => loadPretrainedTokenizer(dir),
      (err: Error) =>
        err instanceof CheckpointError &&
        err.message ===
          `${join(dir, 'tokenizer_config.json')}: eos_token "<|nope|>" is not in tokenizer.json`,
    )
  })

  it('pretrained-tokenizer - a tokenizer without a chat template: one clear line naming tokenizer_config.json', () => {
    const { chat_template: _, ...base } = qwenConfig
    const dir = withConfig(base)
    assert.doesNotThrow(() => loadPretrainedTokenizer(dir))
    assert.throws(
      () => loadJinjaChatFormat(dir),
      (err: Error) =>
        err instanceof CheckpointError &&
        err.message ===
          `${join(dir, 'tokenizer_config.json')}: has no chat_template (the tokenizer of a base model?); a chat model is needed` &&
        !err.message.includes('\n'),
    )
  })

  it('pretrained-tokenizer - a chat_template list without a "default" entry names the file', () => {
    const dir = withConfig({ ...qwenConfig, chat_template: [{ name: 'tool_use', template: '{{ x }}' }] })
    assert.throws(
      () => loadJinjaChatFormat(dir),
      (err: Error) =>
        err instanceof CheckpointError &&
        err.message ===
          `${join(dir, 'tokenizer_config.json')}: chat_template is a list without a "default" template`,
    )
  })

  it('pretrained-tokenizer - a chat_template.jinja beside a config without chat_template is used', () => {
    const { chat_template: template, ...base } = qwenConfig
    const dir = withConfig(base)
    writeFileSync(join(dir, 'chat_template.jinja'), template as string)
    const format = loadJinjaChatFormat(dir)
    assert.equal(format.decode(format.generationPrompt()), '<|im_start|>assistant\n')
  })
})
