import assert from 'node:assert/strict'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import type { z } from 'zod'
import { createRunDir, type RunDir } from '../../actors/index.ts'
import {
  Learner,
  learnerSettingsOf,
  RewardModelLearner,
  rewardActorOptionsOf,
  rolloutSettingsOf,
} from '../../actors/testing.ts'
import { heldOutSettings, runBudgetOf } from '../../bin/run/index.ts'
import {
  ADAMW_DEFAULTS,
  createTransformer,
  disposeTransformer,
  RL_STEP_DEFAULTS,
  Tokenizer,
} from '../../gpu/index.ts'
import { DEFAULT_TOKENIZER_SETTINGS } from '../../gpu/testing.ts'
import {
  builtinTaskCatalog,
  defineRecipe,
  nodeConfigOf,
  type RecipeInput,
  RecipeSchema,
  resolveTasks,
} from '../../recipes/index.ts'
import { writeTinyQwen3 } from '../support/tiny-qwen3.ts'

/**
 * Every leaf field of a zod schema as a recipe path (`rl.kl.beta`, `tasks[0].difficulty.start`):
 * defaults, optionals and transforms are looked through, arrays give their element's fields at [0].
 */
function leafPaths(schema: z.ZodType, prefix = ''): string[] {
  type Def = {
    type: string
    innerType?: z.ZodType
    in?: z.ZodType
    shape?: Record<string, z.ZodType>
    element?: z.ZodType
  }
  let def = schema.def as unknown as Def
  for (;;) {
    if (def.innerType) def = def.innerType.def as unknown as Def
    else if (def.type === 'pipe' && def.in) def = def.in.def as unknown as Def
    else break
  }
  if (def.type === 'object' && def.shape)
    return Object.entries(def.shape).flatMap(([k, v]) => leafPaths(v, prefix ? `${prefix}.${k}` : k))
  if (def.type === 'array' && def.element) {
    const inner = leafPaths(def.element, `${prefix}[0]`)
    return inner.length === 1 && inner[0] === `${prefix}[0]` ? [prefix] : inner
  }
  return [prefix]
}

/** `value` with `path` (`a.b[0].c`) set to `v`: plain objects and arrays copied along the path. */
function setPath(value: Record<string, unknown>, path: string, v: unknown): Record<string, unknown> {
  const keys = path.split(/\.|(?=\[)/).map((k) => (k.startsWith('[') ? Number(k.slice(1, -1)) : k))
  const put = (obj: unknown, i: number): unknown => {
    const key = keys[i]!
    const next = (old: unknown) =>
      i === keys.length - 1 ? v : put(old ?? (typeof keys[i + 1] === 'number' ? [] : {}), i + 1)
    if (Array.isArray(obj)) {
      const copy: unknown[] = [...obj]
      copy[Number(key)] = next(copy[Number(key)])
      return copy
    }
    const copy: Record<string, unknown> = { ...(obj as Record<string, unknown>) }
    copy[String(key)] = next(copy[String(key)])
    return copy
  }
  return put(value, 0) as Record<string, unknown>
}

/** Deep merge of plain objects (arrays replaced), for a case's `with`. */
function merge(a: Record<string, unknown>, b: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...a }
  for (const [k, v] of Object.entries(b))
    out[k] =
      v && typeof v === 'object' && !Array.isArray(v) && a[k] && typeof a[k] === 'object'
        ? merge(a[k] as Record<string, unknown>, v as Record<string, unknown>)
        : v
  return out
}

/** Every leaf of a plain value by path, `undefined` leaves included. */
function leaves(value: unknown, prefix = '', out = new Map<string, unknown>()): Map<string, unknown> {
  if (Array.isArray(value)) for (const [i, v] of value.entries()) leaves(v, `${prefix}[${i}]`, out)
  else if (value && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    if (Object.keys(value).length === 0) out.set(prefix, '{}')
    for (const [k, v] of Object.entries(value)) leaves(v, prefix ? `${prefix}.${k}` : k, out)
  } else out.set(prefix, value)
  return out
}

const runsDir = mkdtempSync(join(tmpdir(), 'triad-recipe-fields-'))
after(() => rmSync(runsDir, { recursive: true, force: true }))
/** Two tiny pretrained models (Qwen3 layout) for the `model.hf` and `model.lora` fields: 1 and 2 layers. */
const hfDir = join(runsDir, 'tiny-qwen3')
const hfDir2 = join(runsDir, 'tiny-qwen3-2')
/** The base recipe's model with a pretrained policy (both sides of the `model.hf`/`model.lora` cases). */
const withHf = { model: { hf: hfDir, lora: {} } }
const tokenizer = new Tokenizer(DEFAULT_TOKENIZER_SETTINGS)

/**
 * What a recipe turns into below the recipe layer, as the run builds it: the node config every
 * process reads; the learner's GRPO-TCR step config and the AdamW instances of the policy's
 * `Learner` and of the `RewardModelLearner`; the rollout driver's settings (task mix, episode
 * limits, sampling); and what only the run driver reads (budget, held-out evaluation, run dir).
 */
async function lowered(input: Record<string, unknown>) {
  const recipe = resolveTasks(defineRecipe(input as RecipeInput), builtinTaskCatalog())
  // A folder per call: createRunDir makes at most 100 runs of one name in one second.
  const dir: RunDir = await createRunDir({
    runsDir: mkdtempSync(join(runsDir, 'r-')),
    name: recipe.name,
    recipe,
  })
  const budget = runBudgetOf(recipe)
  const node = nodeConfigOf(recipe, dir, budget.maxSteps)
  const modelConfig = { layers: 1, width: 8, heads: 2, contextLength: 8, vocabSize: tokenizer.vocabSize }
  const model = createTransformer(modelConfig, { seed: 0 })
  const settings = learnerSettingsOf(node)
  const learner = await Learner.create({ model, tokenizer, ...settings })
  const rm = new RewardModelLearner(
    { config: modelConfig, tokenizer },
    0,
    settings.lr,
    node.triad!,
    64,
    settings.optimizer,
  )
  const adamw = (o: { weightDecay: number; gradClip: number }) => ({
    weightDecay: o.weightDecay,
    gradClip: o.gradClip,
  })
  const judge = rewardActorOptionsOf(node, { config: modelConfig, tokenizer })
  const view = {
    node: { ...node, run: undefined, runDir: undefined },
    learner: { lr: settings.lr, step: learner.config, adamw: adamw(learner.optimizer) },
    rewardModel: { adamw: adamw(rm.optimizer), stepTemperature: rm.stepConfig.temperature },
    judge: {
      m: judge.m,
      seed: judge.seed,
      modelSeed: judge.model.seed,
      temperature: judge.model.temperature,
    },
    rollout: rolloutSettingsOf(node, true),
    driver: {
      budget,
      heldOut: heldOutSettings(recipe),
      runDirName: dir.id.replace(/-\d{8}-\d{6}(-\d+)?$/, ''),
      nodeRun: node.run === dir.id,
    },
  }
  learner.dispose()
  rm.rm.dispose()
  disposeTransformer(model)
  return leaves(view)
}

/**
 * Each recipe field: the value the test sets (`set`), what else both sides of the comparison need
 * (`with`, merged into the base recipe), and every place of the lowered view that must change,
 * with the value it must change to. Nothing else may change.
 */
type Case = { set: unknown; with?: Record<string, unknown>; lands: Record<string, unknown> }

/** An agent task (the `tasks[0].agent` family of cases). */
const withAgent = { tasks: [{ name: 'calc-agent', agent: 'recipes/agents/calc-agent.ts', instances: 8 }] }
/** An MCP task (the `tasks[0].mcp` family of cases). */
const withMcp = {
  tasks: [
    {
      name: 'calc-mcp',
      mcp: [{ command: 'node', args: ['recipes/agents/calc-mcp-server.ts'] }],
      instances: 8,
      reward: 'recipes/agents/calc-reward.ts',
    },
  ],
}
/** A task field as the node config and the rollout settings both hold it. */
const bothSides = (path: string, v: unknown) => ({
  [`node.tasks[0].${path}`]: v,
  [`rollout.tasks[0].${path}`]: v,
})
const cases: Record<string, Case> = {
  name: { set: 'other', lands: { 'driver.runDirName': 'other' } },
  seed: {
    set: 5,
    lands: {
      'node.seed': 5,
      'rollout.seed': 5 + 101,
      'driver.heldOut.seed': 5 + 4242,
      'judge.seed': 5 + 23,
      'judge.modelSeed': 5 + 7,
    },
  },
  'tasks[0].name': {
    set: 'maze',
    lands: {
      'node.tasks[0].name': 'maze',
      'rollout.tasks[0].name': 'maze',
      'driver.heldOut.tasks[0].name': 'maze',
      'node.triad.levels.calc.min': undefined,
      'node.triad.levels.calc.max': undefined,
      'node.triad.levels.calc.default': undefined,
      'node.triad.levels.maze.min': 1,
      'node.triad.levels.maze.max': 7,
      'node.triad.levels.maze.default': 1,
    },
  },
  'tasks[0].weight': { set: 3, lands: { 'node.tasks[0].weight': 3, 'rollout.tasks[0].weight': 3 } },
  'tasks[0].difficulty.start': {
    set: 2,
    lands: {
      'node.tasks[0].difficulty': 2,
      'rollout.tasks[0].difficulty': 2,
      'driver.heldOut.tasks[0].difficulty': 2,
      'node.triad.levels.calc.default': 2,
    },
  },
  'tasks[0].difficulty.min': {
    set: 2,
    with: { tasks: [{ name: 'calc', difficulty: { start: 2 } }] },
    lands: { 'node.triad.levels.calc.min': 2 },
  },
  'tasks[0].difficulty.max': { set: 2, lands: { 'node.triad.levels.calc.max': 2 } },
  'tasks[0].agent': {
    set: 'recipes/agents/calc_agent.py',
    with: withAgent,
    lands: bothSides('agent.program', 'recipes/agents/calc_agent.py'),
  },
  'tasks[0].instances': {
    set: 'recipes/agents/calc-instances.jsonl',
    with: withAgent,
    lands: bothSides('agent.instances', 'recipes/agents/calc-instances.jsonl'),
  },
  // The held-out instances: the task joins the held-out evaluation, played as in training.
  'tasks[0].evalInstances': {
    set: 'recipes/agents/calc-eval.jsonl',
    with: withAgent,
    lands: {
      'driver.heldOut.tasks[0].name': 'calc-agent',
      'driver.heldOut.tasks[0].difficulty': 1,
      'driver.heldOut.tasks[0].maxTurns': 8,
      'driver.heldOut.tasks[0].agent.program': 'recipes/agents/calc-agent.ts',
      'driver.heldOut.tasks[0].agent.instances': 'recipes/agents/calc-eval.jsonl',
      'driver.heldOut.tasks[0].agent.concurrency': 16,
      'driver.heldOut.tasks[0].agent.timeoutS': 300,
    },
  },
  'tasks[0].concurrency': { set: 3, with: withAgent, lands: bothSides('agent.concurrency', 3) },
  'tasks[0].timeoutS': { set: 60, with: withAgent, lands: bothSides('agent.timeoutS', 60) },
  'tasks[0].reward': {
    set: 'recipes/agents/calc-reward.ts',
    with: withAgent,
    lands: bothSides('agent.reward', 'recipes/agents/calc-reward.ts'),
  },
  'tasks[0].mcp[0].command': {
    set: 'python3',
    with: withMcp,
    lands: bothSides('mcp.servers[0].command', 'python3'),
  },
  'tasks[0].mcp[0].args': {
    set: ['other.ts'],
    with: withMcp,
    lands: bothSides('mcp.servers[0].args[0]', 'other.ts'),
  },
  'tasks[0].mcp[0].env': {
    set: { A: '1' },
    with: withMcp,
    lands: { ...bothSides('mcp.servers[0].env', undefined), ...bothSides('mcp.servers[0].env.A', '1') },
  },
  'tasks[0].mcp[0].lifetime': {
    set: 'pooled',
    with: withMcp,
    lands: bothSides('mcp.servers[0].lifetime', 'pooled'),
  },
  'tasks[0].mcp[0].timeoutS': { set: 5, with: withMcp, lands: bothSides('mcp.servers[0].timeoutS', 5) },
  'model.hf': {
    set: hfDir2,
    with: withHf,
    lands: { 'node.pretrained.dir': hfDir2, 'node.model.layers': 2 },
  },
  // alpha defaults to 2 * rank, so the rank moves it too.
  'model.lora.rank': {
    set: 4,
    with: withHf,
    lands: { 'node.pretrained.lora.rank': 4, 'node.pretrained.lora.alpha': 8 },
  },
  'model.lora.alpha': { set: 3, with: withHf, lands: { 'node.pretrained.lora.alpha': 3 } },
  'model.lora.targets': {
    set: ['v_proj'],
    with: withHf,
    // From the seven default targets to one: the other six are gone.
    lands: {
      'node.pretrained.lora.targets[0]': 'v_proj',
      ...Object.fromEntries([1, 2, 3, 4, 5, 6].map((i) => [`node.pretrained.lora.targets[${i}]`, undefined])),
    },
  },
  'model.lora.dropout': { set: 0.1, with: withHf, lands: { 'node.pretrained.lora.dropout': 0.1 } },
  'model.layers': { set: 3, lands: { 'node.model.layers': 3 } },
  'model.width': { set: 64, lands: { 'node.model.width': 64 } },
  'model.heads': { set: 2, lands: { 'node.model.heads': 2 } },
  'model.contextLength': {
    set: 2048,
    lands: {
      'node.model.contextLength': 2048,
      'node.sft.batchTokens': 16 * 2048,
      'node.triad.rewardModelSft.batchTokens': 2048,
      'rollout.episode.contextLength': 2048,
    },
  },
  'model.merges': { set: 0, lands: { 'node.tokenizerMerges': 0 } },
  'model.backend': { set: 'cpu', lands: { 'node.backend': 'cpu' } },
  'model.threads.learner': { set: 1, lands: { 'node.threads.learner': 1 } },
  'model.threads.rollout': { set: 1, lands: { 'node.threads.rollout': 1 } },
  'sft.epochs': { set: 3, lands: { 'node.sft.epochs': 3 } },
  'sft.steps': { set: 7, lands: { 'node.sft.maxSteps': 7 } },
  'sft.batchSize': { set: 4, lands: { 'node.sft.batchTokens': 4 * 1024 } },
  'sft.threads': { set: 2, lands: { 'node.sft.threads': 2 } },
  'sft.lr': { set: 1e-3, lands: { 'node.sft.lr': 1e-3 } },
  'sft.expertTrajectoriesPerTask': { set: 9, lands: { 'node.sft.expertTrajectoriesPerTask': 9 } },
  'sft.expertErrorRate': { set: 0.5, lands: { 'node.sft.errorRate': 0.5 } },
  'sft.expertSuccessRate': { set: 0.5, lands: { 'node.sft.successRate': 0.5 } },
  'sft.experts': {
    set: false,
    lands: { 'node.sft.experts': false, 'node.sft.enabled': false, 'node.sft.batchTokens': 0 },
  },
  'sft.datasets[0].path': {
    set: 'b.jsonl',
    with: { sft: { datasets: [{ path: 'a.jsonl' }] } },
    lands: { 'node.sft.datasets[0].path': join(process.cwd(), 'b.jsonl') },
  },
  'sft.datasets[0].format': {
    set: 'parquet',
    with: { sft: { datasets: [{ path: 'a.jsonl' }] } },
    lands: { 'node.sft.datasets[0].format': 'parquet' },
  },
  'rl.groupSize': { set: 4, lands: { 'node.rl.groupSize': 4, 'rollout.groupSize': 4 } },
  'rl.advantage': {
    set: 'grpo-no-std',
    lands: {
      'node.rl.step.advantage': 'grpo-no-std',
      'learner.step.advantage': 'grpo-no-std',
    },
  },
  'rl.eps_low': { set: 0.1, lands: { 'node.rl.step.loss.eps_low': 0.1, 'learner.step.loss.eps_low': 0.1 } },
  'rl.eps_high': {
    set: 0.4,
    lands: { 'node.rl.step.loss.eps_high': 0.4, 'learner.step.loss.eps_high': 0.4 },
  },
  'rl.c': { set: 3, lands: { 'node.rl.step.loss.c': 3, 'learner.step.loss.c': 3 } },
  'rl.aggregation': {
    set: 'seq-mean-token-mean',
    lands: {
      'node.rl.step.loss.aggregation': 'seq-mean-token-mean',
      'learner.step.loss.aggregation': 'seq-mean-token-mean',
    },
  },
  'rl.overlong.enabled': {
    set: false,
    lands: {
      'node.rl.step.overlong.L_max': undefined,
      'node.rl.step.overlong.L_buf': undefined,
      'learner.step.overlong.L_max': undefined,
      'learner.step.overlong.L_buf': undefined,
    },
  },
  'rl.overlong.L_max': {
    set: 512,
    lands: {
      'node.rl.step.overlong.L_max': 512,
      'learner.step.overlong.L_max': 512,
      'node.rl.step.overlong.L_buf': 128,
      'learner.step.overlong.L_buf': 128,
    },
  },
  'rl.overlong.L_buf': {
    set: 100,
    lands: { 'node.rl.step.overlong.L_buf': 100, 'learner.step.overlong.L_buf': 100 },
  },
  'rl.kl.beta': { set: 0.1, lands: { 'node.rl.step.beta': 0.1, 'learner.step.beta': 0.1 } },
  'rl.kl.estimator': {
    set: 'k1',
    lands: { 'node.rl.step.klEstimator': 'k1', 'learner.step.klEstimator': 'k1' },
  },
  'rl.entropyCoef': {
    set: 0.01,
    lands: { 'node.rl.step.entropyCoef': 0.01, 'learner.step.entropyCoef': 0.01 },
  },
  'rl.lr': { set: 5e-4, lands: { 'node.rl.lr': 5e-4, 'learner.lr': 5e-4 } },
  'rl.weightDecay': {
    set: 0.3,
    lands: {
      'node.rl.optimizer.weightDecay': 0.3,
      'learner.adamw.weightDecay': 0.3,
      'rewardModel.adamw.weightDecay': 0.3,
    },
  },
  'rl.gradClip': {
    set: 0.05,
    lands: {
      'node.rl.optimizer.gradClip': 0.05,
      'learner.adamw.gradClip': 0.05,
      'rewardModel.adamw.gradClip': 0.05,
    },
  },
  'rl.taskAdvantageNorm': {
    set: false,
    lands: { 'node.rl.step.taskAdvantageNorm': false, 'learner.step.taskAdvantageNorm': false },
  },
  'rl.dynamicSampling': {
    set: true,
    lands: { 'node.rl.step.dynamicSampling': true, 'learner.step.dynamicSampling': true },
  },
  'rl.offPolicy.name': {
    set: 'tis',
    lands: { 'node.rl.step.offPolicy.name': 'tis', 'learner.step.offPolicy.name': 'tis' },
  },
  'rl.offPolicy.cap': { set: 3, lands: { 'node.rl.step.offPolicy.cap': 3, 'learner.step.offPolicy.cap': 3 } },
  'rl.offPolicy.low': {
    set: 0.25,
    lands: { 'node.rl.step.offPolicy.low': 0.25, 'learner.step.offPolicy.low': 0.25 },
  },
  'rl.offPolicy.high': {
    set: 4,
    lands: { 'node.rl.step.offPolicy.high': 4, 'learner.step.offPolicy.high': 4 },
  },
  'rl.offPolicy.level': {
    set: 'sequence',
    lands: { 'node.rl.step.offPolicy.level': 'sequence', 'learner.step.offPolicy.level': 'sequence' },
  },
  'pipeline.mode': { set: 'sync', lands: { 'node.pipeline.mode': 'sync' } },
  'pipeline.freshEngines': { set: 2, lands: { 'node.pipeline.freshEngines': 2 } },
  'pipeline.staleEngines': {
    set: 2,
    with: { pipeline: { staleEngines: 1 } },
    lands: { 'node.pipeline.staleEngines': 2 },
  },
  'pipeline.rho': { set: 0.5, lands: { 'node.pipeline.rho': 0.5 } },
  'pipeline.staleEvery': {
    set: 5,
    lands: { 'node.pipeline.staleEvery': 5, 'node.pipeline.stalenessBound': 9 },
  },
  'pipeline.stalenessBound': { set: 40, lands: { 'node.pipeline.stalenessBound': 40 } },
  'pipeline.minBatchGroups': {
    set: 2,
    lands: { 'node.pipeline.minBatchGroups': 2, 'node.pipeline.checkpointEvery': 8 },
  },
  'pipeline.bufferGroups': {
    set: 32,
    lands: {
      'node.pipeline.maxBatchGroups': 32,
      'node.pipeline.bufferGroups': 32,
      'node.pipeline.checkpointEvery': 8,
    },
  },
  'pipeline.concurrency': { set: 8, lands: { 'node.pipeline.concurrency': 8, 'rollout.concurrency': 8 } },
  'pipeline.maxTurns': { set: 3, lands: { 'node.pipeline.maxTurns': 3, 'rollout.episode.maxTurns': 3 } },
  'pipeline.maxNewTokens': {
    set: 40,
    lands: {
      'node.pipeline.maxNewTokens': 40,
      'rollout.episode.maxNewTokens': 40,
      'driver.heldOut.maxNewTokens': 40,
    },
  },
  'pipeline.temperature': {
    set: 0.7,
    lands: {
      'node.pipeline.temperature': 0.7,
      'node.rl.step.temperature': 0.7,
      'learner.step.temperature': 0.7,
      'rollout.episode.temperature': 0.7,
      'driver.heldOut.temperature': 0.7,
    },
  },
  'pipeline.top_p': {
    set: 0.9,
    lands: { 'node.pipeline.top_p': 0.9, 'rollout.episode.top_p': 0.9, 'driver.heldOut.top_p': 0.9 },
  },
  'triad.adaptiveTasks': { set: false, lands: { 'node.triad.adaptiveTasks': false } },
  'triad.adaptEvery': { set: 3, lands: { 'node.triad.adaptEvery': 3 } },
  'triad.adaptHigh': { set: 0.9, lands: { 'node.triad.adaptHigh': 0.9 } },
  'triad.adaptLow': { set: 0.1, lands: { 'node.triad.adaptLow': 0.1 } },
  'triad.stepReward.enabled': {
    set: false,
    with: { triad: { trainRewardModel: false } },
    lands: { 'node.triad.stepReward.enabled': false, 'node.triad.rewardModelSft.enabled': false },
  },
  'triad.stepReward.lambda': { set: 0.25, lands: { 'node.triad.stepReward.lambda': 0.25 } },
  'triad.stepReward.m': { set: 2, lands: { 'node.triad.stepReward.m': 2, 'judge.m': 2 } },
  'triad.stepReward.minAccuracy': { set: 0.7, lands: { 'node.triad.stepReward.minAccuracy': 0.7 } },
  'triad.stepReward.judgeShare': {
    set: 0.5,
    lands: { 'node.triad.stepReward.judgeShare': 0.5, 'rollout.annotateShare': 0.5 },
  },
  'triad.stepReward.temperature': {
    set: 0.5,
    lands: {
      'node.triad.stepReward.temperature': 0.5,
      'rewardModel.stepTemperature': 0.5,
      'judge.temperature': 0.5,
    },
  },
  'triad.trainRewardModel': { set: false, lands: { 'node.triad.trainRewardModel': false } },
  'triad.rewardModelBatch': { set: 8, lands: { 'node.triad.rewardModelBatch': 8 } },
  'triad.rewardModelSft.enabled': { set: false, lands: { 'node.triad.rewardModelSft.enabled': false } },
  'triad.rewardModelSft.steps': { set: 10, lands: { 'node.triad.rewardModelSft.steps': 10 } },
  'triad.rewardModelSft.batchSize': { set: 2, lands: { 'node.triad.rewardModelSft.batchTokens': 2 * 1024 } },
  'triad.rewardModelSft.lr': { set: 1e-3, lands: { 'node.triad.rewardModelSft.lr': 1e-3 } },
  'triad.rewardModelSft.expertTrajectoriesPerTask': {
    set: 5,
    lands: { 'node.triad.rewardModelSft.expertTrajectoriesPerTask': 5 },
  },
  'triad.rewardModelSft.policyTrajectoriesPerTask': {
    set: 5,
    lands: { 'node.triad.rewardModelSft.policyTrajectoriesPerTask': 5 },
  },
  'triad.rewardModelSft.heldOutTrajectoriesPerTask': {
    set: 5,
    lands: { 'node.triad.rewardModelSft.heldOutTrajectoriesPerTask': 5 },
  },
  'triad.rewardModelSft.errorRate': { set: 0.5, lands: { 'node.triad.rewardModelSft.errorRate': 0.5 } },
  'triad.rewardModelSft.successRate': { set: 0.5, lands: { 'node.triad.rewardModelSft.successRate': 0.5 } },
  'triad.rewardModelSft.init': { set: 'seed', lands: { 'node.triad.rewardModelSft.init': 'seed' } },
  'evaluation.every': { set: 10, lands: { 'node.pipeline.evaluationEvery': 10 } },
  'evaluation.k': { set: 4, lands: { 'driver.heldOut.k': 4 } },
  'evaluation.instancesPerTask': { set: 8, lands: { 'driver.heldOut.instances': 8 } },
  'checkpoints.every': { set: 2, lands: { 'node.pipeline.checkpointEvery': 2 } },
  'checkpoints.keep': { set: 5, lands: { 'node.pipeline.keepCheckpoints': 5 } },
  'budget.maxSteps': { set: 7, lands: { 'node.maxSteps': 7, 'driver.budget.maxSteps': 7 } },
  // A time budget alone leaves the steps unbounded (the default 200 is for a budget without either).
  'budget.maxMinutes': {
    set: 2,
    lands: {
      'driver.budget.maxMs': 120_000,
      'node.maxSteps': 1_000_000,
      'driver.budget.maxSteps': 1_000_000,
    },
  },
}

describe('recipes/recipe-schema', () => {
  before(async () => {
    await writeTinyQwen3(hfDir, { layers: 1 })
    await writeTinyQwen3(hfDir2, { layers: 2 })
  })

  it('recipe fields - every leaf of the schema has a case here', () => {
    const paths = leafPaths(RecipeSchema)
    assert.deepEqual(
      paths.filter((p) => !(p in cases)),
      [],
      'a recipe field without a case: add what it changes',
    )
    assert.deepEqual(
      Object.keys(cases).filter((p) => !paths.includes(p)),
      [],
      'a case without a recipe field',
    )
  })

  it('recipe fields - each changes exactly what it names below the recipe', async () => {
    const base: Record<string, unknown> = { tasks: [{ name: 'calc' }] }
    const wrong: string[] = []
    for (const [path, c] of Object.entries(cases)) {
      const start = c.with ? merge(base, c.with) : base
      let before: Map<string, unknown>
      let afterward: Map<string, unknown>
      try {
        before = await lowered(start)
        afterward = await lowered(setPath(start, path, c.set))
      } catch (err) {
        wrong.push(`${path}: ${(err as Error).message}`)
        continue
      }
      const changed: Record<string, unknown> = {}
      for (const key of new Set([...before.keys(), ...afterward.keys()]))
        if (!Object.is(before.get(key), afterward.get(key))) changed[key] = afterward.get(key)
      try {
        assert.deepEqual(changed, c.lands)
      } catch {
        wrong.push(`${path}: changed ${JSON.stringify(changed)}, expected ${JSON.stringify(c.lands)}`)
      }
    }
    assert.deepEqual(wrong, [])
  })
})

describe('recipes/recipe-schema - agent and MCP tasks', () => {
  it('recipe schema - an agent or MCP task without its instances, both at once, an MCP task without reward, agent fields on a built-in task: each a clear error', () => {
    const bad: [unknown, RegExp][] = [
      [{ name: 'a', agent: 'recipes/agents/calc-agent.ts' }, /tasks\[0\]\.instances.*needs its instances/s],
      [
        { name: 'a', agent: 'x.ts', mcp: [{ command: 'node' }], instances: 2, reward: 'r.ts' },
        /tasks\[0\]\.mcp.*not both/s,
      ],
      [
        { name: 'a', mcp: [{ command: 'node' }], instances: 2 },
        /tasks\[0\]\.reward.*needs a reward function/s,
      ],
      [{ name: 'calc', concurrency: 2 }, /tasks\[0\]\.concurrency.*for agent and MCP tasks/s],
      [{ name: 'calc', evalInstances: 8 }, /tasks\[0\]\.evalInstances.*for agent and MCP tasks/s],
      [{ name: 'a', agent: 'x.ts', instances: 2, evalInstances: 0 }, /tasks\[0\]\.evalInstances/],
      [{ name: 'a', agent: 'x.ts', instances: 0 }, /tasks\[0\]\.instances/],
      [
        { name: 'a', mcp: [{ command: 'node', lifetime: 'forever' }], instances: 2, reward: 'r.ts' },
        /lifetime/,
      ],
    ]
    for (const [task, message] of bad)
      assert.throws(() => defineRecipe({ tasks: [task] } as RecipeInput), message, JSON.stringify(task))
  })

  it('recipe schema - an old recipe parses as before: its tasks get no agent or MCP field', () => {
    const r = defineRecipe({ tasks: [{ name: 'calc' }] })
    assert.deepEqual(Object.keys(r.tasks[0]!).sort(), ['difficulty', 'name', 'weight'])
  })
})

describe('recipes/recipe-schema - defaults', () => {
  it("recipe schema - a recipe without rl settings gives the learner gpu's defaults (RL_STEP_DEFAULTS, ADAMW_DEFAULTS)", () => {
    const recipe = resolveTasks(defineRecipe({ tasks: [{ name: 'calc' }] }), builtinTaskCatalog())
    const { rl } = nodeConfigOf(recipe, { id: 'r', path: '/runs/r' } as RunDir, 1)
    const { offPolicy: _o, dynamicSampling: _d, overlong: _l, ...step } = rl.step
    assert.deepEqual(step, { ...RL_STEP_DEFAULTS })
    assert.deepEqual(rl.optimizer, {
      weightDecay: ADAMW_DEFAULTS.weightDecay,
      gradClip: ADAMW_DEFAULTS.gradClip,
    })
  })
})
