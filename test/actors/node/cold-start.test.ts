import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  coldStart,
  expertExamples,
  firstEpisodesPerTask,
  playExperts,
  sftEpisodes,
} from '../../../actors/node/cold-start.ts'
import {
  createTransformer,
  disposeTransformer,
  loadJinjaChatFormat,
  renderChat,
  Tokenizer,
} from '../../../gpu/index.ts'
import { QWEN3_TOKENIZER_DIR } from '../../support/qwen3-tokenizer.ts'
import { useTestBackend } from '../../support/test-backend.ts'
import { tinyNodeConfig } from '../../support/tiny-node-config.ts'

describe('actors/node/cold-start', () => {
  it('firstEpisodesPerTask - the first episodes of each task of a larger corpus are the episodes of a smaller one', async () => {
    const config = tinyNodeConfig('cs', '/tmp/unused', {
      tasks: [
        { name: 'calc', difficulty: { start: 1 } },
        { name: 'maze', difficulty: { start: 1 } },
      ],
    })
    const corpus = await playExperts(config, 4)
    assert.equal(corpus.length, 8)
    assert.deepEqual(firstEpisodesPerTask(corpus, 4, 2), await playExperts(config, 2))
    assert.deepEqual(firstEpisodesPerTask(corpus, 4, 0), [])
    assert.deepEqual(firstEpisodesPerTask([], 0, 0), [])
    assert.throws(
      () => firstEpisodesPerTask(corpus, 4, 5),
      (e: unknown) => e instanceof RangeError && e.message === 'take (5) must be <= perTask (4)',
    )
  })

  it('sftEpisodes - code episodes against an unreachable sandbox end in task_error and are never SFT data; with none left the SFT says why', async () => {
    const old = process.env.TRIAD_SANDBOX_URL
    process.env.TRIAD_SANDBOX_URL = 'http://127.0.0.1:1'
    try {
      const config = tinyNodeConfig('cs', '/tmp/unused', {
        tasks: [
          { name: 'calc', difficulty: { start: 1 } },
          { name: 'code', difficulty: { start: 1 } },
        ],
      })
      const corpus = await playExperts(config, 2)
      assert.deepEqual(
        corpus.map((e) => e.status),
        ['completed', 'completed', 'task_error', 'task_error'],
      )
      const { kept, dropped } = sftEpisodes(corpus)
      assert.equal(dropped, 2)
      assert.deepEqual(kept, corpus.slice(0, 2))
      await useTestBackend()
      const tokenizer = new Tokenizer()
      const model = createTransformer(
        { layers: 1, width: 16, heads: 2, contextLength: 384, vocabSize: tokenizer.vocabSize },
        { seed: 1 },
      )
      try {
        await assert.rejects(
          coldStart(model, tokenizer, corpus.slice(2), config, () => {}),
          (e: unknown) =>
            e instanceof Error &&
            e.message ===
              'no expert trajectories to train on: all 2 ended in task_error (the task failed; see the tool messages of an episode)',
        )
      } finally {
        disposeTransformer(model)
      }
    } finally {
      if (old === undefined) delete process.env.TRIAD_SANDBOX_URL
      else process.env.TRIAD_SANDBOX_URL = old
    }
  })
})

describe('actors/node/cold-start - expert examples in either chat format', () => {
  it("expertExamples - triad's tokenizer renders with ChatML, a Qwen3 ChatFormat with its own template; both cut at contextLength + 1", async () => {
    const config = tinyNodeConfig('cs', '/tmp/unused', {
      tasks: [{ name: 'calc', difficulty: { start: 1 } }],
    })
    const episodes = await playExperts(config, 2)
    const tok = new Tokenizer()
    const triad = expertExamples(episodes, tok, 100_000)
    assert.deepEqual(
      triad.examples.map((e) => [...e.ids]),
      episodes.map((t) => [...renderChat(tok, t.messages, { tools: t.tools }).ids]),
    )
    const qwen = loadJinjaChatFormat(QWEN3_TOKENIZER_DIR)
    const full = expertExamples(episodes, qwen, 100_000)
    assert.equal(full.truncated, 0)
    episodes.forEach((t, i) => {
      const ids = full.examples[i]!.ids
      assert.equal(qwen.decode(ids), qwen.text(t.messages, t.tools, false))
      const assistantTurns = t.messages.filter((m) => m.role === 'assistant').length
      // Each assistant turn's learned span ends with <|im_end|>; nothing else is learned.
      const learnedEnds = [...ids].filter(
        (id, k) => id === 151645 && full.examples[i]!.lossMask[k] === 1,
      ).length
      assert.equal(learnedEnds, assistantTurns)
    })
    const cut = expertExamples(episodes, qwen, 50)
    assert.equal(cut.truncated, 2)
    assert.deepEqual([...cut.examples[0]!.ids], [...full.examples[0]!.ids.slice(0, 51)])
  })
})
