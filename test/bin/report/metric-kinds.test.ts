import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import { chartKindOf } from '../../../bin/report/metric-kinds.ts'

describe('bin/report/metric-kinds', () => {
  it('chartKindOf - counters, deltas, rates and gauges by key', () => {
    const keys = [
      'rollout/episodes',
      'rollout/generated_tokens',
      'rollout/groups',
      'rollout/failed/env_error',
      'rollout/turns_stale',
      'pipeline/backpressure_waits',
      'pipeline/dropped_stale',
      'reward/judge_calls',
      'reward_model/updates',
      'env/adapter/raised',
      'process/rollout/restarts',
      'runtime/restarts',
      'rollout/episodes/calc',
      'engine/tokens_per_s',
      'sft/tokens_per_s',
      'rollout/success/calc',
      'rollout/generated_tokens_mean/calc',
      'rollout/stale_turn_frac',
      'pipeline/staleness_mean',
      'env/difficulty/calc',
      'restarts_total',
    ]
    assert.deepEqual(Object.fromEntries(keys.map((k) => [k, chartKindOf(k)])), {
      'rollout/episodes': 'counter',
      'rollout/generated_tokens': 'counter',
      'rollout/groups': 'counter',
      'rollout/failed/env_error': 'counter',
      'rollout/turns_stale': 'counter',
      'pipeline/backpressure_waits': 'counter',
      'pipeline/dropped_stale': 'counter',
      'reward/judge_calls': 'counter',
      'reward_model/updates': 'counter',
      'env/adapter/raised': 'counter',
      'process/rollout/restarts': 'counter',
      'runtime/restarts': 'counter',
      'rollout/episodes/calc': 'delta',
      'engine/tokens_per_s': 'rate',
      'sft/tokens_per_s': 'rate',
      'rollout/success/calc': 'gauge',
      'rollout/generated_tokens_mean/calc': 'gauge',
      'rollout/stale_turn_frac': 'gauge',
      'pipeline/staleness_mean': 'gauge',
      'env/difficulty/calc': 'gauge',
      restarts_total: 'gauge',
    })
  })
})
