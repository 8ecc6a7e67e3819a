import assert from 'node:assert/strict'
import { existsSync, mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { parquetReadObjects } from 'hyparquet'
import { getTask } from '../../actors/index.ts'
import { readSftDataset } from '../../actors/testing.ts'
import { registerCollect } from '../../bin/commands/collect.ts'
import type { CollectedRow } from '../../bin/trajectories/collected-rows.ts'
import { closedPort, fakeEndpoint, plainCompletion } from '../support/bad-endpoint.ts'
import { assertOpenAiConversation } from '../support/openai-chat-schema.ts'
import { type ServedCheckpoint, serveTinyCheckpoint } from '../support/served-checkpoint.ts'
import { runTriadInProcess } from '../support/triad-in-process.ts'
import { runTriad } from '../support/triad-process.ts'

/** Two episodes of calc and of sql, turns of at most 16 tokens, seeded sampling at temperature 1. */
const QUICK = [
  '--tasks',
  'calc,sql',
  '--episodes',
  '2',
  '--max-tokens',
  '16',
  '--seed',
  '5',
  '--temperature',
  '1',
]

const tmp = () => mkdtempSync(join(tmpdir(), 'triad-collect-'))

describe('bin/collect - against triad serve', () => {
  let served: ServedCheckpoint
  before(async () => {
    served = await serveTinyCheckpoint('mine')
  })
  after(async () => {
    await served?.stop()
  })

  it('collect - writes one row per episode, whole conversations that sft.datasets reads back; parquet holds the same rows', async () => {
    const dir = tmp()
    const jsonl = join(dir, 'set.jsonl')
    const r = await runTriad([
      'collect',
      '--policy',
      `openai:${served.base}`,
      '--model',
      'mine',
      ...QUICK,
      '--out',
      jsonl,
    ])
    assert.equal(r.code, 0, r.stderr)
    assert.match(r.stderr, /wrote 4 episodes to .*set\.jsonl \(solved per task: calc \d\/2, sql \d\/2\)/)
    const rows = readFileSync(jsonl, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as CollectedRow)
    assert.deepEqual(
      rows.map((x) => [x.task, x.index, x.split, x.policy, x.model]),
      [
        ['calc', 0, 'train', `openai:${served.base}`, 'mine'],
        ['calc', 1, 'train', `openai:${served.base}`, 'mine'],
        ['sql', 0, 'train', `openai:${served.base}`, 'mine'],
        ['sql', 1, 'train', `openai:${served.base}`, 'mine'],
      ],
    )
    for (const x of rows) {
      const task = getTask(x.task)
      assert.equal(x.difficulty, task.difficulty.default)
      assert.deepEqual(x.tools, [...task.tools])
      assert.equal(x.messages[0]!.role, 'system')
      // The whole conversation: every turn the model took (invalid ones too) and what answered it.
      assert.equal(x.messages.filter((m) => m.role === 'assistant').length, x.turns)
      assert.ok(x.turns >= 1)
      assert.ok(['completed', 'invalid_action', 'turn_limit', 'context_limit'].includes(x.status), x.status)
      assert.equal(typeof x.metrics.success, 'number')
      assert.ok(x.seed >= 0 && Number.isInteger(x.seed))
      // A valid OpenAI conversation (a turn without a call answered by a user message), one name
      // for the turn count.
      assertOpenAiConversation(x.messages, x.tools, `${x.task} ${x.index}`)
      assert.equal('turn' in x.metrics, false)
      assert.equal(x.metrics.turns, x.turns)
    }
    // A random tiny model makes invalid actions: they are kept with the environment's answers.
    assert.ok(
      rows.some((x) => (x.metrics.invalid_actions ?? 0) > 0),
      JSON.stringify(rows.map((x) => x.metrics)),
    )
    assert.ok(
      rows.some((x) =>
        x.messages.some((m) => m.role === 'user' && m.content.startsWith('error: no tool call')),
      ),
      'a turn without a tool call is answered by a user message',
    )
    const episodes = await readSftDataset({ path: jsonl })
    assert.deepEqual(
      episodes.map((e) => [e.messages, e.tools]),
      rows.map((x) => [x.messages, x.tools]),
    )

    // The same seeds give the same episodes: the parquet file holds exactly these rows.
    const parquet = join(dir, 'set.parquet')
    const p = await runTriad([
      'collect',
      '--policy',
      `openai:${served.base}`,
      '--model',
      'mine',
      ...QUICK,
      '--out',
      parquet,
    ])
    assert.equal(p.code, 0, p.stderr)
    const bytes = readFileSync(parquet)
    const read = await parquetReadObjects({
      file: bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer,
    })
    assert.deepEqual(
      read.map((x) => ({
        ...x,
        seed: Number(x.seed),
      })),
      rows,
    )
    assert.deepEqual(
      (await readSftDataset({ path: parquet })).map((e) => e.messages),
      rows.map((x) => x.messages),
    )
    assert.equal(existsSync(`${parquet}.part`), false)
  })

  it("collect - a wrong model name fails the start check with the server's 404; nothing is written", async () => {
    const out = join(tmp(), 'x.jsonl')
    const r = await runTriad([
      'collect',
      '--policy',
      `openai:${served.base}`,
      '--model',
      'other',
      ...QUICK,
      '--out',
      out,
    ])
    assert.equal(r.code, 1)
    assert.match(
      r.stderr,
      new RegExp(
        `^triad: policy endpoint ${served.base}/chat/completions \\(model 'other'\\) failed the start check \\(one chat completion with the task's tools\\): HTTP 404: .*model_not_found`,
        'm',
      ),
    )
    assert.equal(existsSync(out), false)
  })
})

describe('bin/collect - bad input', () => {
  /** Runs collect (in this process) against `base` with QUICK settings; its result and out file. */
  const collect = async (base: string, extra: string[] = []) => {
    const out = join(tmp(), 'x.jsonl')
    const r = await runTriadInProcess(registerCollect, [
      'collect',
      '--policy',
      `openai:${base}`,
      '--model',
      'm',
      ...QUICK,
      ...extra,
      '--out',
      out,
    ])
    return { ...r, out }
  }
  /** The one error line: the URL, the model, and what answered. */
  const failedCheck = (base: string, what: string) =>
    new RegExp(
      `^triad: policy endpoint ${base}/chat/completions \\(model 'm'\\) failed the start check [^\\n]*: ${what}[^\\n]*\\n?$`,
    )

  it('collect - an endpoint that does not answer (nothing listening) fails at the start, one line naming the URL', async () => {
    const base = `http://127.0.0.1:${await closedPort()}/v1`
    // The command as a user runs it: its exit status and the line it prints.
    const out = join(tmp(), 'x.jsonl')
    const r = {
      ...(await runTriad(['collect', '--policy', `openai:${base}`, '--model', 'm', ...QUICK, '--out', out])),
      out,
    }
    assert.equal(r.code, 1)
    assert.match(r.stderr, failedCheck(base, 'request failed: fetch failed \\(.*ECONNREFUSED'))
    assert.equal(existsSync(r.out), false)
  })

  it('collect - an endpoint that accepts and stays silent fails at the request deadline', async () => {
    const e = await fakeEndpoint(() => {})
    try {
      const r = await collect(e.base, ['--timeout-ms', '300'])
      assert.equal(r.code, 1)
      assert.match(r.stderr, failedCheck(e.base, 'no answer within 300 ms'))
      assert.equal(existsSync(r.out), false)
    } finally {
      await e.close()
    }
  })

  it('collect - garbage answers (HTML, JSON that is not a chat completion, HTTP 500) fail at the start quoting them', async () => {
    const cases: [(res: import('node:http').ServerResponse) => void, string][] = [
      [
        (res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>It works!</html>'),
        'HTTP 200 with a reply that is not JSON: <html>It works!</html>',
      ],
      [
        (res) => res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}'),
        'HTTP 200 with JSON that is not a chat completion \\(choices: .*\\): \\{"status":"ok"\\}',
      ],
      [
        (res) => res.writeHead(200).end('{"choices":[{"message":{"content":7}}]}'),
        'HTTP 200 with JSON that is not a chat completion \\(choices\\[0\\]\\.message\\.content: ',
      ],
      [(res) => res.writeHead(500).end('upstream exploded'), 'HTTP 500: upstream exploded'],
    ]
    for (const [answer, what] of cases) {
      const e = await fakeEndpoint((_n, res) => answer(res))
      try {
        const r = await collect(e.base)
        assert.equal(r.code, 1, what)
        assert.match(r.stderr, failedCheck(e.base, what))
        assert.equal(e.requests(), 1, 'one request: the start check')
        assert.equal(existsSync(r.out), false)
      } finally {
        await e.close()
      }
    }
  })

  it('collect - an endpoint that fails mid-way stops the collection; the episodes finished by then are written', async () => {
    // Plain-text replies (no tool call) for the first 12 requests, then HTTP 503.
    const e = await fakeEndpoint((n, res) => {
      if (n <= 12)
        res.writeHead(200, { 'content-type': 'application/json' }).end(plainCompletion('I think 4.'))
      else res.writeHead(503).end('overloaded')
    })
    try {
      const r = await collect(e.base, ['--concurrency', '1', '--episodes', '20', '--tasks', 'calc'])
      assert.equal(r.code, 1)
      const m =
        /HTTP 503: overloaded; stopped after (\d+) of 20 episodes, the (\d+) finished written to (\S+)$/m.exec(
          r.stderr,
        )
      assert.ok(m, r.stderr)
      assert.equal(m[1], m[2])
      assert.equal(m[3], r.out)
      const rows = readFileSync(r.out, 'utf8')
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as CollectedRow)
      assert.equal(rows.length, Number(m[1]))
      assert.ok(rows.length >= 1 && rows.length < 12)
      assert.deepEqual(
        rows.map((x) => x.index),
        rows.map((_, i) => i),
      )
      const asked = rows.reduce((a, x) => a + x.turns, 0)
      // The start check, each kept turn, the turns of the episode that met the 503.
      assert.ok(asked <= 11, `${asked} turns kept`)
      for (const x of rows)
        assert.ok(x.messages.some((msg) => msg.role === 'assistant' && msg.content === 'I think 4.'))
    } finally {
      await e.close()
    }
  })

  it('collect - usage errors exit 2: no --policy, not openai:URL, no --out, an unknown extension, an unknown task', async () => {
    const cases: [string[], RegExp][] = [
      [['--out', 'x.jsonl'], /--policy openai:URL is required/],
      [['--policy', 'expert', '--out', 'x.jsonl'], /--policy expert: use openai:URL/],
      [['--policy', 'openai:ftp://h/v1', '--out', 'x.jsonl'], /the URL must be http or https, got ftp:/],
      [['--policy', 'openai:http://127.0.0.1:9/v1'], /--out FILE is required/],
      [
        ['--policy', 'openai:http://127.0.0.1:9/v1', '--out', 'x.csv'],
        /cannot tell the format from the extension/,
      ],
      [
        ['--policy', 'openai:http://127.0.0.1:9/v1', '--out', 'x.jsonl', '--tasks', 'chess'],
        /unknown task 'chess'/,
      ],
      [['--policy', 'openai:http://127.0.0.1:9/v1', '--out', 'x.jsonl', '--episodes', '0'], /--episodes/],
    ]
    for (const [args, message] of cases) {
      const r = await runTriadInProcess(registerCollect, ['collect', ...args])
      assert.equal(r.code, 2, args.join(' '))
      assert.match(r.stderr, message)
    }
    // The command as a user runs it.
    const cli = await runTriad(['collect', '--out', 'x.jsonl'])
    assert.equal(cli.code, 2)
    assert.equal(
      cli.stderr,
      'triad: --policy openai:URL is required (the endpoint that plays the episodes)\n',
    )
  })
})
