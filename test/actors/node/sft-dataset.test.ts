import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { parquetWriteBuffer } from 'hyparquet-writer'
import type { RunDir } from '../../../actors/index.ts'
import {
  coldStart,
  expertExamples,
  playExperts,
  sftTrainingEpisodes,
} from '../../../actors/node/cold-start.ts'
import { readSftDataset } from '../../../actors/node/sft-dataset.ts'
import { writeTrajectoryFile } from '../../../bin/trajectories/trajectory-file.ts'
import type { TrajectoryRow } from '../../../bin/trajectories/trajectory-rows.ts'
import { createTransformer, disposeTransformer, renderChat, Tokenizer } from '../../../gpu/index.ts'
import type { ChatMessage, ToolSchema } from '../../../protocols/index.ts'
import { builtinTaskCatalog, defineRecipe, nodeConfigOf, resolveTasks } from '../../../recipes/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'
import { tinyNodeConfig } from '../../support/tiny-node-config.ts'

const TOOLS: ToolSchema[] = [
  {
    type: 'function',
    function: {
      name: 'add',
      description: 'Add two numbers',
      parameters: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } },
    },
  },
]

/** A conversation with a tool call and its result. */
function chat(n: number): ChatMessage[] {
  return [
    { role: 'system', content: 'You add.' },
    { role: 'user', content: `What is ${n} + 2?` },
    {
      role: 'assistant',
      content: 'Adding.',
      tool_calls: [{ id: 'c0', type: 'function', function: { name: 'add', arguments: `{"a":${n},"b":2}` } }],
    },
    { role: 'tool', content: String(n + 2), tool_call_id: 'c0' },
    { role: 'assistant', content: `${n + 2}` },
  ]
}

const dirOf = () => mkdtempSync(join(tmpdir(), 'triad-sft-data-'))

/** Writes `rows` as JSONL and returns the file. */
function jsonl(rows: unknown[], name = 'd.jsonl'): string {
  const file = join(dirOf(), name)
  writeFileSync(file, rows.map((r) => (typeof r === 'string' ? r : JSON.stringify(r))).join('\n'))
  return file
}

describe('actors/node/sft-dataset', () => {
  it('readSftDataset - JSONL rows and parquet rows (messages as JSON text, and as written by triad trajectories) give their conversations', async () => {
    const rows = [0, 1, 2].map((n) => ({ messages: chat(n), tools: TOOLS, id: n }))
    const want = rows.map((r) => ({ messages: r.messages, tools: TOOLS, status: 'completed' }))
    assert.deepEqual(await readSftDataset({ path: jsonl(rows) }), want)

    const text = join(dirOf(), 'd.parquet')
    const buf = parquetWriteBuffer({
      columnData: [
        { name: 'messages', data: rows.map((r) => JSON.stringify(r.messages)), type: 'STRING' },
        { name: 'tools', data: rows.map(() => JSON.stringify(TOOLS)), type: 'STRING' },
      ],
    })
    writeFileSync(text, new Uint8Array(buf))
    assert.deepEqual(await readSftDataset({ path: text }), want)

    // An export of a run is a dataset as it is.
    const exported = join(dirOf(), 'run.parquet')
    const row = (n: number): TrajectoryRow => ({
      run: 'r',
      task: 'calc',
      group_id: 'g',
      group_seq: 1,
      sample: n,
      index: 0,
      seed: 0,
      difficulty: 1,
      started_version: 0,
      trained_step: 1,
      reward: 1,
      status: 'completed',
      turns: 2,
      stale_turns: 0,
      metrics: { success: 1 },
      messages: chat(n),
      tools: TOOLS,
      input_ids: [1, 2],
      loss_mask: [0, 1],
      logprobs: [0, -0.5],
      versions: [-1, 0],
      turn_starts: [1],
    })
    writeTrajectoryFile(exported, 'parquet', [row(0), row(1), row(2)])
    assert.deepEqual(await readSftDataset({ path: exported }), want)
    // `format` overrides the extension.
    const named = jsonl(rows, 'd.txt')
    assert.deepEqual(await readSftDataset({ path: named, format: 'jsonl' }), want)
  })

  it('readSftDataset - a bad row fails naming the file, row and field: no messages, arguments that are not JSON, an unknown role', async () => {
    const good = { messages: chat(1), tools: TOOLS }
    const noMessages = jsonl([good, { tools: TOOLS }])
    await assert.rejects(readSftDataset({ path: noMessages }), {
      name: 'SftDatasetError',
      message: `sft dataset ${noMessages} row 2: messages: missing (a row is {"messages": [...], "tools": [...]})`,
    })
    const emptyMessages = jsonl([{ messages: [] }])
    await assert.rejects(readSftDataset({ path: emptyMessages }), {
      name: 'SftDatasetError',
      message: `sft dataset ${emptyMessages} row 1: messages: Too small: expected array to have >=1 items`,
    })
    const badArgs = chat(1)
    ;(badArgs[2] as { tool_calls: { function: { arguments: string } }[] }).tool_calls[0]!.function.arguments =
      '{"a":1,'
    const args = jsonl([good, good, { messages: badArgs, tools: TOOLS }])
    await assert.rejects(readSftDataset({ path: args }), {
      name: 'SftDatasetError',
      message: `sft dataset ${args} row 3: messages[2].tool_calls[0].function.arguments: is not JSON: "{\\"a\\":1,"`,
    })
    const role = jsonl([{ messages: [...chat(1).slice(0, 2), { role: 'robot', content: 'hi' }] }])
    await assert.rejects(readSftDataset({ path: role }), {
      name: 'SftDatasetError',
      message: `sft dataset ${role} row 1: messages[2].role: unknown role "robot" (one of system, user, assistant, tool)`,
    })
    const line = jsonl([good, '{"messages": ['])
    await assert.rejects(readSftDataset({ path: line }), {
      name: 'SftDatasetError',
      message: new RegExp(`^sft dataset ${line} row 2: is not JSON: `),
    })
    const ext = jsonl([good], 'd.csv')
    await assert.rejects(readSftDataset({ path: ext }), {
      name: 'SftDatasetError',
      message: `sft dataset ${ext}: cannot tell the format from the extension '.csv': name it .jsonl or .parquet, or give format`,
    })
  })

  it('sft.datasets - the recipe field reaches the node config (absolute paths, SFT on with experts off), and the SFT trains on exactly the rendered rows', async () => {
    const file = jsonl([0, 1, 2, 3].map((n) => ({ messages: chat(n), tools: TOOLS })))
    const recipe = resolveTasks(
      defineRecipe({
        tasks: [{ name: 'calc' }],
        model: { contextLength: 256 },
        sft: { epochs: 1, batchSize: 2, experts: false, datasets: [{ path: file }] },
      }),
      builtinTaskCatalog(),
    )
    const node = nodeConfigOf(recipe, { id: 'r1', path: '/runs/r1' } as RunDir, 10)
    assert.equal(node.sft.enabled, true)
    assert.equal(node.sft.experts, false)
    assert.deepEqual(node.sft.datasets, [{ path: file }])
    const defaults = resolveTasks(defineRecipe({ tasks: [{ name: 'calc' }] }), builtinTaskCatalog())
    assert.deepEqual(nodeConfigOf(defaults, { id: 'r1', path: '/runs/r1' } as RunDir, 10).sft.datasets, [])
    const off = resolveTasks(
      defineRecipe({ tasks: [{ name: 'calc' }], sft: { experts: false } }),
      builtinTaskCatalog(),
    )
    assert.equal(nodeConfigOf(off, { id: 'r1', path: '/runs/r1' } as RunDir, 10).sft.enabled, false)

    const config = tinyNodeConfig('sd', '/tmp/unused', {
      sft: { expertTrajectoriesPerTask: 2, experts: false, datasets: [{ path: file }] },
    })
    const { episodes, fromDatasets } = await sftTrainingEpisodes(config)
    assert.equal(fromDatasets, 4)
    const tokenizer = new Tokenizer()
    const { examples } = expertExamples(episodes, tokenizer, 256)
    assert.deepEqual(
      examples,
      [0, 1, 2, 3].map((n) => renderChat(tokenizer, chat(n), { tools: TOOLS })),
    )
    // With the experts: theirs first, then the rows.
    const both = await sftTrainingEpisodes({ ...config, sft: { ...config.sft, experts: true } })
    assert.deepEqual(both.episodes, [...(await playExperts(config, 2)), ...episodes])

    await useTestBackend()
    const model = createTransformer(
      { layers: 1, width: 16, heads: 2, contextLength: 256, vocabSize: tokenizer.vocabSize },
      { seed: 1 },
    )
    try {
      const sft = await coldStart(model, tokenizer, episodes, config, () => {})
      assert.equal(sft.examples, 4)
      assert.equal(sft.truncated, 0)
      assert.ok(sft.records.length >= 1 && sft.records.every((r) => Number.isFinite(r.loss)))
    } finally {
      disposeTransformer(model)
    }
  })

  it('sft.datasets - a bad row stops the SFT data before anything is trained', async () => {
    const file = jsonl([{ messages: chat(0) }, { messages: [{ role: 'user' }] }])
    const config = tinyNodeConfig('sd', '/tmp/unused', {
      sft: { experts: false, datasets: [{ path: file }] },
    })
    await assert.rejects(sftTrainingEpisodes(config), {
      name: 'SftDatasetError',
      message: `sft dataset ${file} row 2: messages[0].content: Invalid input: expected string, received undefined`,
    })
  })
})
