import assert from 'node:assert/strict'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import {
  type EvaluationSettings,
  evaluateEpisodes,
  evaluatePolicy,
  pairedDifference,
} from '../../../actors/index.ts'
import { AgentInstancesError } from '../../../actors/testing.ts'
import { createTransformer, Tokenizer } from '../../../gpu/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

/**
 * Held-out evaluation of agent and MCP tasks (docs/gateway.md#held-out-evaluation): a tiny random
 * model served through the evaluation's own gateway to the real calc agent (the `openai` package, a
 * child process per episode), and triad's loop over the project's calc MCP server, on the held-out
 * file's instances.
 */
describe('actors/evaluation - agent and MCP tasks on their held-out instances', () => {
  const tokenizer = new Tokenizer()
  const model = async () => {
    await useTestBackend()
    return createTransformer(
      { layers: 1, width: 16, heads: 2, contextLength: 1024, vocabSize: tokenizer.vocabSize },
      { seed: 3 },
    )
  }
  const settings = (instances: string): EvaluationSettings => ({
    tasks: [
      { name: 'calc', difficulty: 1 },
      {
        name: 'calc-agent',
        difficulty: 1,
        maxTurns: 2,
        agent: { program: 'recipes/agents/calc-agent.ts', instances, concurrency: 3, timeoutS: 60 },
      },
      {
        name: 'calc-mcp',
        difficulty: 1,
        maxTurns: 2,
        mcp: {
          servers: [
            {
              command: process.execPath,
              args: ['--import', 'tsx', 'recipes/agents/calc-mcp-server.ts'],
              env: {},
              lifetime: 'pooled',
              timeoutS: 30,
            },
          ],
          instances,
          reward: 'recipes/agents/calc-reward.ts',
        },
      },
    ],
    k: 2,
    instances: 3,
    maxNewTokens: 12,
    temperature: 1,
    seed: 5,
  })

  it('evaluation - the agent task and the MCP task get a row and their instances 0..n-1 in the built-in vocabulary; the same checkpoint evaluated twice pairs up with a difference of exactly 0', async () => {
    const m = await model()
    let progress = 0
    const a = await evaluatePolicy(m, tokenizer, {
      ...settings('recipes/agents/calc-eval.jsonl'),
      onProgress: (done, total) => {
        progress = done
        assert.equal(total, 3 * 3 * 2)
      },
    })
    assert.equal(progress, 18)
    assert.deepEqual(
      a.rows.map((r) => [r.task, r.difficulty, r.n, r.k]),
      [
        ['calc', 1, 3, 2],
        ['calc-agent', 1, 3, 2],
        ['calc-mcp', 1, 3, 2],
      ],
    )
    for (const r of a.rows) {
      assert.equal(r.failed, undefined, `${r.task}: no episode failed`)
      assert.ok(r.avg_at_k >= 0 && r.avg_at_k <= 1)
      if (r.task !== 'calc') assert.ok(r.turns >= 1 && r.turns <= 2, `${r.task} turns ${r.turns}`)
    }
    assert.deepEqual(
      a.instances.filter((i) => i.task !== 'calc').map((i) => [i.task, i.index, i.k]),
      ['calc-agent', 'calc-mcp'].flatMap((task) => [0, 1, 2].map((i) => [task, i, 2])),
    )
    const b = await evaluatePolicy(m, tokenizer, settings('recipes/agents/calc-eval.jsonl'))
    assert.deepEqual(b.instances, a.instances, 'the same seeds sample the same episodes')
    const paired = pairedDifference(a.instances, b.instances)
    assert.deepEqual(
      paired.map((d) => [d.task, d.n, d.avg_at_k_diff, d.avg_at_k_diff_se]),
      [
        ['calc', 3, 0, 0],
        ['calc-agent', 3, 0, 0],
        ['calc-mcp', 3, 0, 0],
        ['mean', 3, 0, 0],
      ],
    )
  })

  it('evaluation - a held-out count above the file plays all of its instances; a file that cannot be read is an AgentInstancesError naming it', async () => {
    const m = await model()
    const two = join(mkdtempSync(join(tmpdir(), 'triad-held-out-')), 'two.jsonl')
    writeFileSync(
      two,
      readFileSync('recipes/agents/calc-eval.jsonl', 'utf8').split('\n').slice(0, 2).join('\n'),
    )
    const only = await evaluatePolicy(m, tokenizer, {
      ...settings(two),
      tasks: [settings(two).tasks[2]!],
      instances: 5,
      k: 1,
    })
    assert.deepEqual(
      only.rows.map((r) => [r.task, r.n]),
      [['calc-mcp', 2]],
    )
    assert.equal(only.rows[0]!.failed, undefined)
    await assert.rejects(
      evaluatePolicy(m, tokenizer, { ...settings('no/such/held-out.jsonl'), k: 1 }),
      (err: Error) => err instanceof AgentInstancesError && /no\/such\/held-out\.jsonl/.test(err.message),
    )
  })

  it('evaluation - an agent task with a served policy is refused with a RangeError naming it (it needs a checkpoint)', async () => {
    await assert.rejects(
      evaluateEpisodes(
        settings('recipes/agents/calc-eval.jsonl'),
        () => ({ act: async () => ({ role: 'assistant', content: '' }) }),
        1,
      ),
      (err: Error) => err instanceof RangeError && /calc-agent/.test(err.message),
    )
  })
})
