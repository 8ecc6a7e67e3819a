import assert from 'node:assert/strict'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { InProcessTransport, startActorSystem, startPolicyEngine } from '../../../actors/index.ts'
import {
  AgentEpisodeError,
  AgentFailure,
  AgentInstances,
  AgentInstancesError,
  AgentRunner,
  type AgentTaskSpec,
  Gateway,
  type PolicyEngine,
  PolicyRouter,
  RolloutDriver,
  WeightStore,
} from '../../../actors/testing.ts'
import { createRng, initWeights, Tokenizer, TriadChatFormat } from '../../../gpu/index.ts'

/**
 * The agent runner with real child processes against a gateway in front of a real tiny engine:
 * the faults of agent programs are failed episodes with their reason, never a failed run.
 */
describe('actors/gateway/agent-runner - agent programs and their faults', () => {
  const system = startActorSystem({ name: 'agent-runner-test' })
  const transport = new InProcessTransport()
  const run = 'ar'
  const tokenizer = new Tokenizer()
  const modelConfig = { layers: 1, width: 16, heads: 2, contextLength: 512, vocabSize: tokenizer.vocabSize }
  const dir = mkdtempSync(join(tmpdir(), 'triad-agents-'))
  let engine: PolicyEngine
  let gateway: Gateway
  let runner: AgentRunner
  const halt = new AbortController()

  /** An agent program `name.mjs` with `body` (ES module, node's fetch). */
  const program = (name: string, body: string) => {
    const file = join(dir, `${name}.mjs`)
    writeFileSync(file, body)
    return file
  }
  const call = `await fetch(process.env.OPENAI_BASE_URL + '/chat/completions', {
    method: 'POST',
    headers: { authorization: 'Bearer ' + process.env.OPENAI_API_KEY, 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: JSON.parse(process.env.TRIAD_INSTANCE).q }] }),
  }).then((r) => { if (!r.ok) process.exit(5) })\n`
  const spec = (file: string, o: Partial<AgentTaskSpec> = {}): AgentTaskSpec => ({
    program: file,
    instances: join(dir, 'instances.jsonl'),
    concurrency: 2,
    timeoutS: 30,
    ...o,
  })
  const play = (s: AgentTaskSpec, seed = 1) =>
    runner.run('t', s, { seed, split: 'train' }, { maxTurns: 2, maxNewTokens: 4 }, 9, halt.signal)
  const failure = (f: AgentFailure, message: RegExp) => (err: unknown) => {
    assert.ok(err instanceof AgentEpisodeError, String(err))
    assert.equal(err.failure, f)
    assert.match(err.message, message)
    return true
  }

  before(async () => {
    writeFileSync(join(dir, 'instances.jsonl'), '{"q": "one"}\n{"q": "two"}\n')
    engine = await startPolicyEngine(system, transport, {
      run,
      id: 'fresh0',
      modelConfig,
      stale: false,
      metricsIntervalMs: 0,
      loadLatest: false,
    })
    const store = await WeightStore.open(transport, run)
    await store.publish(transport, 'policy', 1, initWeights(modelConfig, 7))
    await engine.whenVersion(1)
    gateway = await Gateway.start({
      policy: new PolicyRouter(transport, run, 0, createRng(1)),
      chat: new TriadChatFormat(tokenizer),
      contextLength: modelConfig.contextLength,
      sampling: { temperature: 1, top_p: 1 },
    })
    runner = new AgentRunner(gateway)
  })
  after(async () => {
    halt.abort()
    await gateway.close()
    await engine.stop()
    await system.stop()
    await transport.close()
  })

  it('agent-runner - a program that calls and posts its reward gives its trajectory; it saw its instance and session', async () => {
    const file = program(
      'good',
      `${call}
      const inst = JSON.parse(process.env.TRIAD_INSTANCE)
      const ok = process.env.TRIAD_SESSION && process.env.OPENAI_BASE_URL.endsWith('/sessions/' + process.env.TRIAD_SESSION + '/v1')
      await fetch(process.env.TRIAD_REWARD_URL, {
        method: 'POST',
        headers: { authorization: 'Bearer ' + process.env.TRIAD_API_KEY },
        body: JSON.stringify({ reward: { index: inst.index, env: ok ? 1 : 0 } }),
      })`,
    )
    const r = await play(spec(file), 3)
    assert.equal(r.trajectories.length, 1)
    assert.equal(r.trajectories[0]!.reward, 1 + 1, 'instance 3 mod 2 = 1, and the environment was right')
    assert.equal(r.trajectories[0]!.messages![0]!.content, 'two')
  })

  it('agent-runner - a crash is one failed episode with its exit code and stderr tail', async () => {
    const file = program('crash', `${call}process.stderr.write('boom: the agent broke\\n'); process.exit(3)`)
    await assert.rejects(
      play(spec(file)),
      failure(AgentFailure.Crashed, /exited with code 3; its stderr ends: boom: the agent broke/),
    )
  })

  it('agent-runner - a program that hangs past timeoutS is killed and its episode dropped with the reason', async () => {
    const file = program('hang', `${call}process.stderr.write('thinking\\n'); setInterval(() => {}, 1000)`)
    const t0 = Date.now()
    await assert.rejects(
      play(spec(file, { timeoutS: 1 })),
      failure(
        AgentFailure.Timeout,
        /no reward within 1\.0 s of the episode's start \(1 calls made\); killed; its stderr ends: thinking/,
      ),
    )
    assert.ok(Date.now() - t0 < 10_000)
  })

  it('agent-runner - a program that exits 0 without a reward, with no reward function, is dropped as agent_no_reward', async () => {
    const file = program('silent', call)
    await assert.rejects(play(spec(file)), failure(AgentFailure.NoReward, /exited without posting a reward/))
  })

  it('agent-runner - a reward function that returns no finite number fails the episode, naming it', async () => {
    const reward = join(dir, 'bad-reward.mjs')
    writeFileSync(reward, 'export default () => Number.NaN\n')
    await assert.rejects(
      play(spec(program('silent2', call), { reward })),
      failure(AgentFailure.RewardFailed, /returned NaN, not a finite number/),
    )
  })

  it('agent-runner - a missing program fails to start as a crash with the reason, not a thrown run', async () => {
    await assert.rejects(
      play(spec(join(dir, 'nope.sh'))),
      failure(AgentFailure.Crashed, /could not start .*nope\.sh/),
    )
  })

  it('agent-runner - the rollout driver restarts a crashed agent and counts the failure by cause', async () => {
    const file = program('crash2', 'process.exit(1)')
    const driver = new RolloutDriver(
      'r',
      { env: undefined as never, policy: undefined as never, tokenizer, agents: runner },
      {
        tasks: [{ name: 't', weight: 1, agent: spec(file) }],
        groupSize: 2,
        concurrency: 2,
        attempts: 2,
        seed: 1,
        episode: { maxTurns: 2, maxNewTokens: 4, contextLength: 512, temperature: 1, top_p: 1 },
      },
      async () => {},
      () => 0,
    )
    assert.deepEqual(await driver.runBatch(1), [])
    assert.equal(driver.stats.retried, 2, 'each of the 2 episodes restarted once')
    assert.deepEqual(driver.stats.failed, { agent_crashed: 2 })
    assert.equal(driver.metrics()['rollout/failed/agent_crashed'], 2)
  })

  it('agent-instances - bad instances are a clear error: a count not positive, a missing file, a line not a JSON object', () => {
    assert.throws(() => AgentInstances.of(0), AgentInstancesError)
    assert.throws(() => AgentInstances.of(join(dir, 'missing.jsonl')), /cannot be read/)
    writeFileSync(join(dir, 'bad.jsonl'), '{"q": 1}\n[2]\n')
    assert.throws(() => AgentInstances.of(join(dir, 'bad.jsonl')), /line 2 is not a JSON object/)
    writeFileSync(join(dir, 'empty.jsonl'), '\n')
    assert.throws(() => AgentInstances.of(join(dir, 'empty.jsonl')), /has no instance/)
    assert.deepEqual(AgentInstances.of(5).pick(-7), { index: 2, seed: -7 })
  })
})
