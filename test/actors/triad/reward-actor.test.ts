import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import { Svcm } from '@nats-io/services'
import {
  connectNats,
  type NatsTransport,
  RewardModel,
  remoteActor,
  startActorSystem,
} from '../../../actors/index.ts'
import { rewardReplies, startRewardModel } from '../../../actors/testing.ts'
import {
  ErrorCode,
  type JudgeStep,
  type PayloadOf,
  RemoteError,
  RewardJudge,
  type RewardJudged,
  RewardLoadWeights,
  Subjects,
} from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

const config = { layers: 1, width: 16, heads: 2, contextLength: 48, vocabSize: 264 }
const step = (move: string): JudgeStep => ({
  task: 'compass',
  history: [],
  step: { role: 'assistant', content: `go ${move}` },
})

describe('actors/triad/reward-actor - reward.judge over NATS', () => {
  const run = `rewardactor-${process.pid}`
  const system = startActorSystem({ name: 'reward-test' })
  let t: NatsTransport
  before(async () => {
    await useTestBackend()
    t = await connectNats({ servers: '127.0.0.1:4222', run, role: 'test', id: '0' })
  })
  after(async () => {
    await system.stop()
    await t.close()
  })

  it('reward actor - judges steps m times, loads new weights, answers a too-long prompt with an error reply', async () => {
    const { ref, exposed } = await startRewardModel(system, t, run, {
      model: { config, seed: 4, prompt: { system: () => 'j' } },
      m: 3,
    })
    const rm = remoteActor(t, Subjects.rewardJudge(run), { replies: rewardReplies })
    const reply = await rm.ask(RewardJudge.make({ steps: [step('N'), step('S')], seed: 9 }), 10_000)
    assert.equal(reply.type, 'reward.judged')
    const p = reply.payload as PayloadOf<typeof RewardJudged>
    assert.equal(p.m, 3)
    assert.ok(p.judgements instanceof Int8Array && p.judgements.length === 6)
    assert.ok(p.logprobs instanceof Float32Array && p.logprobs.every((l) => l <= 0 && Number.isFinite(l)))
    assert.ok(p.tokens instanceof Int32Array && p.tokens.length === 6)
    assert.equal(p.version, 0)
    // The same request from a local model with the same weights gives the same verdicts.
    const local = new RewardModel({ config, seed: 4, prompt: { system: () => 'j' } })
    const mine = await local.judge([step('N'), step('S')], 3, 9)
    assert.deepEqual([...p.tokens], [...mine.tokens])

    // New weights (the pipeline's sync), then the version shows in the replies.
    const other = new RewardModel({ config, seed: 77 })
    const loaded = await ref.ask(
      RewardLoadWeights.make({ version: 5, weights: await other.getWeights() }),
      10_000,
    )
    assert.deepEqual(loaded.payload, { version: 5 })
    const after = (await rm.ask(RewardJudge.make({ steps: [step('N')], m: 2, seed: 9 }), 10_000))
      .payload as PayloadOf<typeof RewardJudged>
    assert.equal(after.version, 5)
    assert.equal(after.tokens.length, 2)
    other.dispose()
    local.dispose()

    // A prompt longer than the context is a validation reply; the actor does not crash.
    const long: JudgeStep = { ...step('N'), step: { role: 'assistant', content: 'x'.repeat(100) } }
    await assert.rejects(
      rm.ask(RewardJudge.make({ steps: [long] }), 10_000),
      (err: unknown) =>
        err instanceof RemoteError &&
        err.code === ErrorCode.InvalidMessage &&
        /judge prompt of step 0/.test(err.message),
    )
    // Bad requests are refused at the boundary.
    await assert.rejects(
      rm.ask(RewardJudge.make({ steps: [] }), 10_000),
      (err: unknown) => err instanceof RemoteError && err.code === ErrorCode.InvalidMessage,
    )
    assert.equal(ref.stats().restarts, 0)
    assert.equal(exposed.stats().invalid, 1)

    // Registered as the NATS service triad-reward.
    const client = new Svcm(t.nc as never).client({ strategy: 'timer', maxWait: 500 })
    const found: string[] = []
    for await (const i of await client.info('triad-reward')) if (i.metadata?.run === run) found.push(i.name)
    assert.deepEqual(found, ['triad-reward'])
    await exposed.stop()
    await ref.stop()
  })
})
