import assert from 'node:assert/strict'
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { after, before, describe, it } from 'node:test'
import {
  CheckpointError,
  learnTaskTokenizer,
  loadTokenizer,
  saveTokenizer,
  Tokenizer,
} from '../../gpu/index.ts'
import { DEFAULT_TOKENIZER_SETTINGS } from '../../gpu/testing.ts'

describe('gpu/tokenizer-file', () => {
  let dir: string
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'triad-tok-'))
  })
  after(async () => {
    await rm(dir, { recursive: true, force: true })
  })

  it('tokenizer-file - save then load gives the same settings and encoding, merges included', async () => {
    const text = 'Go west. Go east. Go west, then west. {"name":"move"} {"name":"look"}'
    const tok = learnTaskTokenizer([text, text], 20)
    const file = path.join(dir, 'tokenizer.json')
    await saveTokenizer(file, tok)
    const loaded = await loadTokenizer(file)
    assert.deepEqual(loaded.settings, tok.settings)
    assert.equal(loaded.vocabSize, 284)
    assert.deepEqual([...loaded.encode(text)], [...tok.encode(text)])
    const json = JSON.parse(await readFile(file, 'utf8'))
    assert.equal(json.merges.length, 20)
  })

  it('tokenizer-file - the default tokenizer file has no merges field', async () => {
    const file = path.join(dir, 'plain.json')
    await saveTokenizer(file, new Tokenizer())
    assert.deepEqual(JSON.parse(await readFile(file, 'utf8')), DEFAULT_TOKENIZER_SETTINGS)
    assert.equal((await loadTokenizer(file)).vocabSize, 264)
  })

  it('tokenizer-file - missing, non-JSON and invalid files give CheckpointError', async () => {
    await assert.rejects(
      loadTokenizer(path.join(dir, 'nope.json')),
      (e) => e instanceof CheckpointError && /cannot read/.test(e.message),
    )
    const bad = path.join(dir, 'bad.json')
    await writeFile(bad, '{not json')
    await assert.rejects(loadTokenizer(bad), /not JSON/)
    await writeFile(bad, '[1, 2]')
    await assert.rejects(loadTokenizer(bad), /not tokenizer settings/)
    await writeFile(bad, JSON.stringify({ ...DEFAULT_TOKENIZER_SETTINGS, merges: [[97, 259]] }))
    await assert.rejects(
      loadTokenizer(bad),
      (e) => e instanceof CheckpointError && /not a byte/.test(e.message),
    )
  })
})
