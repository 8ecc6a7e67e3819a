import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import {
  episodeJudgeSteps,
  getTask,
  InProcessTransport,
  playExpert,
  remoteActor,
  startActorSystem,
  TRIAD_SWITCHES_DEFAULTS,
} from '../../../actors/index.ts'
import { judgementAccuracy, rewardReplies, StepJudge, startRewardModel } from '../../../actors/testing.ts'
import { Subjects } from '../../../protocols/index.ts'
import { useTestBackend } from '../../support/test-backend.ts'

const run = 'stepjudge'
const m = 3

describe('actors/triad/step-judge - judging real maze episodes against their step labels', () => {
  const system = startActorSystem({ name: 'step-judge-test' })
  const transport = new InProcessTransport()
  before(async () => {
    await useTestBackend()
  })
  after(async () => {
    await system.stop()
    await transport.close()
  })

  it('step judge - on: one request per episode, m judgements per step, accuracy against step_good; off: no request at all', async () => {
    const maze = getTask('maze')
    // An expert that errs often, so the episode has good and bad steps (step_good labels from the task).
    const episode = await playExpert(
      maze,
      { difficulty: 1, index: 3 },
      { errorRate: 0.5, successRate: 1, seed: 2 },
    )
    const steps = episodeJudgeSteps('maze', episode.messages)
    assert.equal(steps.length, episode.stepGood.length)
    assert.ok(episode.stepGood.includes(0) && episode.stepGood.includes(1), `labels ${episode.stepGood}`)
    for (const [j, s] of steps.entries()) {
      assert.equal(s.step.role, 'assistant')
      assert.equal(s.history.filter((h) => h.role === 'assistant').length, j)
    }

    const { exposed } = await startRewardModel(system, transport, run, {
      model: { config: { layers: 1, width: 16, heads: 2, contextLength: 2048, vocabSize: 264 }, seed: 1 },
    })
    const remote = remoteActor(transport, Subjects.rewardJudge(run), { replies: rewardReplies })
    const switches = {
      ...TRIAD_SWITCHES_DEFAULTS,
      stepReward: { enabled: true, lambda: 1, m, minAccuracy: 0 },
    }
    const judge = new StepJudge(remote, switches)
    const judged = await judge.judgeEpisode('maze', episode.messages, 7)
    assert.ok(judged)
    assert.equal(judged.judgements.length, steps.length * m)
    const labels = episode.stepGood.map((g) => (g ? 1 : -1))
    const acc = judgementAccuracy(judged.judgements, m, labels)!
    assert.ok(acc >= 0 && acc <= 1)
    assert.deepEqual(judge.metrics(), {
      'reward/judge_calls': 1,
      'reward/judged_steps': steps.length,
      'triad/switch/step_reward': 1,
    })
    assert.equal(exposed.stats().handled, 1)

    const off = new StepJudge(remote, { ...switches, stepReward: { ...switches.stepReward, enabled: false } })
    assert.equal(await off.judgeEpisode('maze', episode.messages, 7), undefined)
    assert.deepEqual(off.metrics(), {
      'reward/judge_calls': 0,
      'reward/judged_steps': 0,
      'triad/switch/step_reward': 0,
    })
    assert.equal(exposed.stats().handled, 1, 'no request reached the reward model')
    await exposed.stop()
  })
})
