import assert from 'node:assert/strict'
import { describe, it } from 'node:test'
import {
  checkRecipe,
  DEFAULT_MAX_STEPS,
  defineRecipe,
  isRecipe,
  parseRecipe,
  parseStoredRecipe,
  RecipeError,
  type RecipeInput,
  recipeSettings,
} from '../../recipes/index.ts'
import { recipeProblems } from '../support/recipe-problems.ts'

const problems = recipeProblems

const base: RecipeInput = { tasks: [{ name: 'calc' }] }

describe('recipes/define-recipe', () => {
  it('defineRecipe - fills the documented defaults (GRPO-TCR, AgentRL pipeline, triad)', () => {
    const r = defineRecipe(base)
    assert.equal(r.name, 'triad')
    assert.equal(r.seed, 0)
    assert.deepEqual(r.tasks, [{ name: 'calc', weight: 1, difficulty: {} }])
    assert.deepEqual(r.model, {
      layers: 2,
      width: 128,
      heads: 4,
      contextLength: 1024,
      merges: 512,
      backend: 'auto',
      threads: { learner: 'auto', rollout: 'auto' },
    })
    assert.deepEqual(r.rl, {
      groupSize: 8,
      advantage: 'grpo',
      eps_low: 0.2,
      eps_high: 0.28,
      c: 10,
      aggregation: 'token-mean',
      overlong: { enabled: true, L_max: 768, L_buf: 192 },
      kl: { beta: 0, estimator: 'k3' },
      entropyCoef: 0,
      lr: 1e-4,
      weightDecay: 0.01,
      gradClip: 1,
      taskAdvantageNorm: true,
      dynamicSampling: false,
      offPolicy: { name: 'none', cap: 2, low: 0.5, high: 5, level: 'token' },
    })
    assert.equal(r.pipeline.mode, 'async')
    assert.equal(r.pipeline.rho, 0.25)
    assert.equal(r.pipeline.staleEvery, 25)
    assert.equal(r.pipeline.stalenessBound, 29)
    assert.deepEqual(r.triad.stepReward, {
      enabled: true,
      lambda: 0.5,
      m: 3,
      minAccuracy: 0.6,
      judgeShare: 1,
      temperature: 1,
    })
    assert.equal(r.triad.rewardModelBatch, 64)
    assert.deepEqual(r.evaluation, { every: 25, k: 8, instancesPerTask: 16 })
    assert.deepEqual(r.checkpoints, { every: 50, keep: 3 })
    assert.deepEqual(r.budget, { maxSteps: DEFAULT_MAX_STEPS })
  })

  it('defineRecipe - computes the derived sizes right after parsing', () => {
    const r = defineRecipe({
      tasks: [
        { name: 'calc', weight: 3 },
        { name: 'sql', weight: 1 },
      ],
      model: { width: 96, heads: 4 },
      sft: { epochs: 3, batchSize: 16, expertTrajectoriesPerTask: 20, steps: 7 },
      rl: { groupSize: 4 },
      pipeline: {
        freshEngines: 2,
        staleEngines: 1,
        minBatchGroups: 3,
        bufferGroups: 5,
        maxTurns: 4,
        maxNewTokens: 50,
      },
      evaluation: { k: 4, instancesPerTask: 10 },
      budget: { maxMinutes: 5 },
    })
    assert.deepEqual(r.derived, {
      taskProbabilities: { calc: 0.75, sql: 0.25 },
      headDim: 24,
      engines: 3,
      minBatchTrajectories: 12,
      bufferTrajectories: 20,
      maxResponseTokens: 200,
      sftTrajectories: 40,
      sftBatchTokens: 16 * 1024, // batchSize * contextLength (default 1024)
      sftStepsAtMost: 7, // ceil(40 / 16) * 3 = 9, capped by steps 7
      evalSamples: 80,
    })
    assert.deepEqual(r.budget, { maxMinutes: 5 }, 'no default step limit when maxMinutes is given')
    // Two SFT threads: each step takes two batches, so an epoch has half the steps (rounded up).
    const threaded = defineRecipe({ ...base, sft: { epochs: 3, batchSize: 16, threads: 2 } })
    assert.equal(threaded.derived.sftStepsAtMost, 6) // ceil(ceil(64 / 16) / 2) * 3
  })

  it('defineRecipe - a wrong value is an error naming the field path', () => {
    assert.deepEqual(problems({ ...base, rl: { eps_high: 0 } }), ['rl.eps_high: must be > 0'])
    assert.deepEqual(problems({ ...base, rl: { eps_low: 1 } }), ['rl.eps_low: must be < 1'])
    assert.deepEqual(problems({ tasks: [{ name: 'calc', weight: -1 }] }), ['tasks[0].weight: must be > 0'])
    assert.deepEqual(problems({ ...base, pipeline: { rho: 1.5 } }), ['pipeline.rho: must be <= 1'])
    assert.deepEqual(problems({ ...base, model: { layers: 1.5 } }), ['model.layers: must be an integer'])
    assert.deepEqual(problems({ ...base, pipeline: { mode: 'fast' } }), [
      'pipeline.mode: must be one of: async, sync',
    ])
    assert.deepEqual(problems({ ...base, rl: { kl: { estimator: 'k9' } } }), [
      'rl.kl.estimator: must be one of: k1, k2, k3',
    ])
    assert.deepEqual(problems({ ...base, rl: { offPolicy: { name: 'ppo' } } }), [
      'rl.offPolicy.name: must be one of: none, decoupled, tis, icepop',
    ])
    assert.deepEqual(problems({ ...base, rl: { offPolicy: { cap: 0.5 } } }), [
      'rl.offPolicy.cap: must be >= 1',
    ])
    assert.deepEqual(problems({ ...base, rl: { offPolicy: { low: 1 } } }), ['rl.offPolicy.low: must be < 1'])
    assert.deepEqual(problems({ ...base, rl: { offPolicy: { high: 1 } } }), [
      'rl.offPolicy.high: must be > 1',
    ])
    assert.deepEqual(problems({ ...base, rl: { offPolicy: { level: 'batch' } } }), [
      'rl.offPolicy.level: must be one of: token, sequence',
    ])
    assert.deepEqual(problems({ ...base, seed: 'one' }), ['seed: expected number, got string'])
    assert.deepEqual(problems({}), ['tasks: is required (array)'])
    assert.deepEqual(problems({ tasks: [] }), ['tasks: needs at least 1 item(s)'])
    assert.match(problems({ ...base, name: 'my run' })[0]!, /^name: use letters, digits/)
  })

  it('defineRecipe - an unknown field is an error that lists the valid fields', () => {
    assert.deepEqual(problems({ ...base, rl: { epsHigh2: 0.3 } }), [
      'rl.epsHigh2: unknown field; valid fields: groupSize, advantage, eps_low, eps_high, c, aggregation, overlong, kl, entropyCoef, lr, weightDecay, gradClip, taskAdvantageNorm, dynamicSampling, offPolicy',
    ])
    assert.deepEqual(
      problems({ ...base, pipeline: { rhoo: 0.1 } })[0]!.split(';')[0],
      'pipeline.rhoo: unknown field',
    )
    assert.deepEqual(problems({ tasks: [{ name: 'calc', difficulty: { level: 2 } }] }), [
      'tasks[0].difficulty.level: unknown field; valid fields: start, min, max',
    ])
    assert.match(
      problems({ ...base, learner: {} })[0]!,
      /^learner: unknown field; valid fields: name, seed, tasks,/,
    )
  })

  it('defineRecipe - checks across fields name the field to change', () => {
    assert.deepEqual(problems({ ...base, model: { width: 100, heads: 3 } }), [
      'model.width: must be a multiple of model.heads (3)',
    ])
    assert.deepEqual(problems({ ...base, model: { width: 12, heads: 4 } }), [
      'model.width: width / heads (3) must be even for rotary positions',
    ])
    assert.deepEqual(problems({ ...base, rl: { overlong: { L_max: 100, L_buf: 200 } } }), [
      'rl.overlong.L_buf: must be <= rl.overlong.L_max (100)',
    ])
    assert.deepEqual(problems({ ...base, pipeline: { staleEngines: 0 } }), [
      'pipeline.rho: must be 0 when pipeline.staleEngines is 0 (no stale engine to send turns to)',
    ])
    assert.match(
      problems({ ...base, pipeline: { staleEvery: 10, stalenessBound: 5 } })[0]!,
      /^pipeline\.stalenessBound: must be >= pipeline\.staleEvery \(10\)/,
    )
    assert.match(
      problems({ ...base, triad: { stepReward: { enabled: false } } })[0]!,
      /^triad\.trainRewardModel: needs triad\.stepReward\.enabled/,
    )
    // One judgement a step gives the consistency update nothing (its advantages are z-scored across
    // the m judgements); judging no group gives nothing at all.
    assert.deepEqual(problems({ ...base, triad: { stepReward: { m: 1 } } }), [
      "triad.stepReward.m: 1 with triad.trainRewardModel: the consistency advantages are z-scored across a step's m judgements, so one judgement gives the reward model nothing to learn (m >= 2, or triad.trainRewardModel false)",
    ])
    assert.equal(
      defineRecipe({ ...base, triad: { stepReward: { m: 1 }, trainRewardModel: false } }).triad.stepReward.m,
      1,
    )
    assert.deepEqual(problems({ ...base, triad: { stepReward: { judgeShare: 0 } } }), [
      'triad.stepReward.judgeShare: 0 judges no group, so there are no step rewards and nothing for the reward model to learn: turn triad.stepReward.enabled off instead',
    ])
    assert.deepEqual(problems({ ...base, triad: { adaptLow: 0.9 } }), [
      'triad.adaptLow: must be < triad.adaptHigh (0.8)',
    ])
    assert.deepEqual(problems({ tasks: [{ name: 'calc', difficulty: { min: 3, max: 2 } }] }), [
      'tasks[0].difficulty.min: must be <= difficulty.max (2)',
    ])
    assert.deepEqual(problems({ tasks: [{ name: 'calc' }, { name: 'maze', evalSize: 4 }] }), [
      'tasks[1].evalSize: removed: it changed nothing (the eval split is made by content, and evaluation.instancesPerTask says how many held-out instances are played)',
    ])
    assert.deepEqual(problems({ tasks: [{ name: 'calc' }, { name: 'calc' }] }), [
      "tasks[1].name: task 'calc' is listed twice (also tasks[0])",
    ])
    assert.deepEqual(problems({ ...base, pipeline: { maxNewTokens: 2048 } }), [
      'pipeline.maxNewTokens: must be < model.contextLength (1024)',
    ])
    // valid without stale engines when rho is 0
    assert.equal(parseRecipe({ ...base, pipeline: { staleEngines: 0, rho: 0 } }).derived.engines, 1)
  })

  it('defineRecipe - an overlong L_max beyond model.contextLength is refused, naming both fields and values', () => {
    assert.deepEqual(
      problems({ ...base, model: { contextLength: 512 }, rl: { overlong: { L_max: 1024, L_buf: 64 } } }),
      [
        'rl.overlong.L_max: 1024 must be <= model.contextLength (512): a response never outgrows the context, so the -1 beyond L_max could never apply',
      ],
    )
    assert.throws(
      () => defineRecipe({ ...base, model: { contextLength: 256 }, rl: { overlong: { L_max: 300 } } }),
      (err: Error) =>
        err instanceof RecipeError &&
        err.message.startsWith(
          'invalid recipe:\nrl.overlong.L_max: 300 must be <= model.contextLength (256): ',
        ),
    )
    // equal is fine; so is any L_max while the shaping is off
    assert.equal(
      parseRecipe({ ...base, model: { contextLength: 512 }, rl: { overlong: { L_max: 512 } } }).rl.overlong
        .L_max,
      512,
    )
    const off = parseRecipe({
      ...base,
      model: { contextLength: 512 },
      rl: { overlong: { enabled: false, L_max: 2048 } },
    })
    assert.equal(off.rl.overlong.L_max, 2048)
  })

  it('defineRecipe - the overlong defaults follow a shorter context: L_max the context, L_buf a quarter of it', () => {
    assert.deepEqual(parseRecipe({ ...base, model: { contextLength: 512 } }).rl.overlong, {
      enabled: true,
      L_max: 512,
      L_buf: 128,
    })
    assert.deepEqual(parseRecipe({ ...base, model: { contextLength: 2048 } }).rl.overlong, {
      enabled: true,
      L_max: 768,
      L_buf: 192,
    })
    // an explicit L_max below the default buffer gets a quarter of it as buffer; an explicit L_buf is kept
    assert.deepEqual(parseRecipe({ ...base, rl: { overlong: { L_max: 100 } } }).rl.overlong, {
      enabled: true,
      L_max: 100,
      L_buf: 25,
    })
    assert.equal(
      parseRecipe({ ...base, model: { contextLength: 512 }, rl: { overlong: { L_buf: 8 } } }).rl.overlong
        .L_buf,
      8,
    )
    // the stored recipe of a run keeps them
    const stored = JSON.parse(JSON.stringify(parseRecipe({ ...base, model: { contextLength: 384 } })))
    assert.deepEqual(parseStoredRecipe(stored).rl.overlong, { enabled: true, L_max: 384, L_buf: 96 })
  })

  it('defineRecipe - the message lists every problem, one per line', () => {
    assert.throws(
      () => defineRecipe({ tasks: [{ name: 'calc', weight: 0 }], rl: { eps_high: -1 } }),
      (err: Error) =>
        err instanceof RecipeError &&
        err.message === 'invalid recipe:\ntasks[0].weight: must be > 0\nrl.eps_high: must be > 0',
    )
  })

  it('defineRecipe - bad fields and checks across fields come in one list, not in rounds', () => {
    assert.deepEqual(
      problems({
        tasks: [{ name: 'calc' }],
        sft: { epochs: -1 },
        rl: { eps_high: 0 },
        model: { width: 100, heads: 3 },
        pipeline: { maxNewTokens: 2048 },
        triad: { adaptLow: 0.9 },
      }),
      [
        'sft.epochs: must be >= 0',
        'rl.eps_high: must be > 0',
        'model.width: must be a multiple of model.heads (3)',
        'pipeline.maxNewTokens: must be < model.contextLength (1024)',
        'triad.adaptLow: must be < triad.adaptHigh (0.8)',
      ],
    )
  })

  it('defineRecipe - a check across fields that reads a bad field is left out: each problem is said once', () => {
    // heads 0 is refused; width % heads is not checked against it (nor against the default heads)
    assert.deepEqual(problems({ ...base, model: { width: 100, heads: 0 } }), ['model.heads: must be >= 1'])
    assert.deepEqual(problems({ ...base, model: { contextLength: 8 }, pipeline: { maxNewTokens: 2048 } }), [
      'model.contextLength: must be >= 16',
    ])
    assert.deepEqual(problems({ tasks: [{ name: 'calc', difficulty: { start: 1.5, max: 0 } }] }), [
      'tasks[0].difficulty.start: must be an integer',
    ])
    // a bad item of the task list cannot be left out on its own: the fields' problems only
    assert.deepEqual(problems({ tasks: [5], pipeline: { maxNewTokens: 2048 } }), [
      'tasks[0]: expected object, got number',
    ])
  })

  it('checkRecipe - throws nothing: every problem, and the recipe with the bad fields at their defaults', () => {
    const check = checkRecipe({ tasks: [{ name: 'calc', weight: -1 }], rl: { lr: 0 } })
    assert.deepEqual(check.issues, [
      { path: 'tasks[0].weight', message: 'must be > 0' },
      { path: 'rl.lr', message: 'must be > 0' },
    ])
    assert.equal(check.recipe?.tasks[0]?.weight, 1)
    assert.equal(check.recipe?.rl.lr, 1e-4)
    assert.equal(isRecipe(check.recipe), false, 'not a valid recipe')
    assert.equal(checkRecipe(42).recipe, undefined)
    assert.deepEqual(checkRecipe(base).issues, [])
  })

  it('defineRecipe - the result is deeply frozen and recognised', () => {
    const r = defineRecipe(base)
    assert.ok(isRecipe(r))
    assert.ok(!isRecipe({ ...r }))
    assert.throws(() => {
      ;(r.rl as { lr: number }).lr = 1
    }, TypeError)
    assert.throws(() => {
      ;(r.tasks as unknown[]).push({})
    }, TypeError)
  })

  it('defineRecipe - a renamed field or another spelling of a field gets one line naming the recipe field', () => {
    assert.deepEqual(problems({ ...base, rl: { entropy: 0.01 } }), ['rl.entropy: renamed to rl.entropyCoef'])
    assert.deepEqual(problems({ ...base, rl: { epsHigh: 0.3, dualClip: 3, kl: { klCoef: 0.1 } } }).sort(), [
      'rl.dualClip: the recipe spells it rl.c',
      'rl.epsHigh: the recipe spells it rl.eps_high',
      'rl.kl.klCoef: the recipe spells it rl.kl.beta',
    ])
    assert.deepEqual(problems({ ...base, pipeline: { topP: 0.9, minGroups: 2 } }), [
      'pipeline.topP: the recipe spells it pipeline.top_p',
      'pipeline.minGroups: the recipe spells it pipeline.minBatchGroups',
    ])
  })

  it('parseStoredRecipe - a recipe.json with a renamed field reads it under the new name', () => {
    const stored = { ...recipeSettings(defineRecipe({ ...base, rl: { entropyCoef: 0.02 } })) }
    const { entropyCoef, ...rl } = stored.rl
    assert.equal(entropyCoef, 0.02)
    const old = { ...stored, rl: { ...rl, entropy: 0.03 } }
    assert.equal(parseStoredRecipe(JSON.parse(JSON.stringify(old))).rl.entropyCoef, 0.03)
    assert.equal('entropy' in old.rl, true, 'the stored value is not changed')
  })

  it('parseStoredRecipe - a recipe read back from its JSON is the same recipe', () => {
    const r = defineRecipe({ ...base, sft: { steps: 3 }, budget: { maxSteps: 10, maxMinutes: 2 } })
    const again = parseStoredRecipe(JSON.parse(JSON.stringify(r)))
    assert.deepEqual(again, r)
  })
})
