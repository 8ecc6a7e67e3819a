import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { OnlineStepAccuracy } from '../../../actors/testing.ts'

const step = (labelledGood: number, rightGood: number, labelledBad: number, rightBad: number) => ({
  'reward_model/labelled_good': labelledGood,
  'reward_model/right_good': rightGood,
  'reward_model/labelled_bad': labelledBad,
  'reward_model/right_bad': rightBad,
})

describe('actors/triad/online-accuracy', () => {
  it('online accuracy - pools the newest steps that hold the window; (TPR + TNR) / 2 once both kinds were judged', () => {
    const acc = new OnlineStepAccuracy(10)
    assert.deepEqual(acc.metrics(), { 'reward_model/online_labelled': 0 })
    acc.add(step(4, 4, 0, 0)) // only good steps: no balanced accuracy yet
    assert.deepEqual(acc.metrics(), { 'reward_model/online_labelled': 4 })
    acc.add({}) // a step without labelled judgements changes nothing
    acc.add(step(2, 0, 4, 3)) // pooled: good 6 (4 right), bad 4 (3 right) -> (4/6 + 3/4) / 2
    assert.deepEqual(acc.metrics(), {
      'reward_model/online_labelled': 10,
      'reward_model/online_balanced_accuracy': (4 / 6 + 3 / 4) / 2,
    })
    acc.add(step(3, 3, 3, 3)) // 16 pooled; dropping the first step leaves 12 >= 10: dropped
    assert.deepEqual(acc.metrics(), {
      'reward_model/online_labelled': 12,
      'reward_model/online_balanced_accuracy': (3 / 5 + 6 / 7) / 2,
    })
  })
  it("online accuracy - the scope earlier_steps reads the counts of every step but the episode's last and reports under its own names", () => {
    const acc = new OnlineStepAccuracy(10, 'earlier_steps')
    acc.add({
      ...step(9, 9, 9, 9), // every step: ignored by this scope
      'reward_model/earlier_steps/labelled_good': 3,
      'reward_model/earlier_steps/right_good': 0,
      'reward_model/earlier_steps/labelled_bad': 3,
      'reward_model/earlier_steps/right_bad': 3,
    })
    assert.deepEqual(acc.metrics(), {
      'reward_model/online_labelled_earlier_steps': 6,
      'reward_model/online_balanced_accuracy_earlier_steps': (0 / 3 + 3 / 3) / 2,
    })
  })
})
