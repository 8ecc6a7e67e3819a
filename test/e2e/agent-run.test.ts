import assert from 'node:assert/strict'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, it } from 'node:test'
import { InProcessTransport } from '../../actors/index.ts'
import { type Envelope, MessageRegistry, type PayloadOf, TrajectoryGroup } from '../../protocols/index.ts'
import { startLearnerRolloutPair } from '../support/learner-rollout-pair.ts'
import { type TinyRecipeChanges, tinyNodeConfig } from '../support/tiny-node-config.ts'

type Group = PayloadOf<typeof TrajectoryGroup>
/** A task of the recipe (its episodes take the tiny recipe's 2 turns at most). */
type RecipeTask = NonNullable<TinyRecipeChanges['tasks']>[number]

/**
 * Agent programs trained end to end at the tiny setting: a learner node and a rollout node of a
 * tiny model in this process (in-process transport); the rollout's gateway serves the agent
 * programs it starts (real child processes), their episodes go to the learner as groups of G, and
 * the learner takes its steps on them.
 */
async function trainAgent(task: RecipeTask) {
  const run = `agent${process.pid}${task.name.replace(/[^a-z]/g, '')}`
  const config = tinyNodeConfig(run, mkdtempSync(join(tmpdir(), 'triad-agent-')), {
    model: { contextLength: 1024 },
    tasks: [task],
  })
  const transport = new InProcessTransport()
  const groups: Group[] = []
  const sub = transport.subscribe(`triad.${run}.>`, {
    accepts: new MessageRegistry([TrajectoryGroup]),
    handler: (m: Envelope) => {
      groups.push(m.payload as Group)
    },
  })
  const pair = await startLearnerRolloutPair(config, async () => transport)
  try {
    let timer: NodeJS.Timeout | undefined
    await Promise.race([
      pair.learner.done,
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('no 2 learner steps in 100 s')), 100_000)
      }),
    ]).finally(() => clearTimeout(timer))
  } finally {
    await sub.stop()
    await pair.stop()
  }
  return groups
}

const calcAgent = (program: string, reward?: string): RecipeTask => ({
  name: program.endsWith('.py') ? 'calc-agent-py' : 'calc-agent',
  agent: program,
  instances: 'recipes/agents/calc-instances.jsonl',
  concurrency: 2,
  timeoutS: 60,
  ...(reward ? { reward } : {}),
})

/** Checks the groups of an agent task: G=2 episodes each, token in, token out. */
function checkGroups(groups: Group[], task: string) {
  assert.ok(groups.length >= 1, 'at least one group reached the learner')
  for (const g of groups) {
    assert.equal(g.task, task)
    assert.ok(g.samples.length >= 2, 'one trajectory per episode of the group (more when segmented)')
    for (const t of g.samples) {
      const sampled = [...t.loss_mask.keys()].filter((i) => t.loss_mask[i] === 1)
      assert.ok(sampled.length > 0, 'sampled tokens are trained')
      assert.ok(sampled.every((i) => t.versions[i]! >= 0))
      assert.ok([0, 1].includes(t.reward))
      assert.ok(t.turns >= 1 && t.turns <= 2)
      const question = t.messages?.find((m) => m.role === 'user')
      assert.match(String(question?.content), /How many/)
    }
  }
}

describe('e2e - agent programs trained through the gateway at the tiny setting', () => {
  it('e2e - an MCP task: the calc MCP server of the project is its environment, its tool in the schemas the policy reads; the learner takes 2 steps', async () => {
    const groups = await trainAgent({
      name: 'calc-mcp',
      mcp: [
        {
          command: process.execPath,
          args: ['--import', 'tsx', 'recipes/agents/calc-mcp-server.ts'],
          lifetime: 'pooled',
          timeoutS: 30,
        },
      ],
      instances: 'recipes/agents/calc-instances.jsonl',
      reward: 'recipes/agents/calc-reward.ts',
    })
    checkGroups(groups, 'calc-mcp')
    const text = Buffer.from(groups[0]!.samples[0]!.tokens.filter((id) => id < 256)).toString('latin1')
    assert.match(text, /calculator/, 'the MCP tool is rendered into the prompt')
  })

  it('e2e - the TypeScript agent (openai package, no triad import) posts its reward; the learner takes 2 steps on its groups', async () => {
    const groups = await trainAgent(calcAgent('recipes/agents/calc-agent.ts'))
    checkGroups(groups, 'calc-agent')
  })

  it('e2e - the Python agent (standard library only) exits and the task reward function rewards it; the learner takes 2 steps', async () => {
    const groups = await trainAgent(
      calcAgent('recipes/agents/calc_agent.py', 'recipes/agents/calc-reward.ts'),
    )
    checkGroups(groups, 'calc-agent-py')
  })
})
