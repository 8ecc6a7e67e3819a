/**
 * Tiny Python agent run: the calc agent in Python with only the standard library
 * (`recipes/agents/calc_agent.py`) trained through the run's agent gateway at the tiny setting. It
 * posts no reward: the task's reward function (`recipes/agents/calc-reward.ts`) rewards each
 * episode over its messages. No cold start and no dynamic triad; it does not learn. Its held-out
 * questions are evaluated at step 2 (in a `triad eval` process) and at the end.
 *
 *   triad run recipes/tiny-agent-py.ts
 */
import { defineRecipe } from './define-recipe.ts'
import type { RecipeInput } from './recipe-schema.ts'

/** The tiny Python agent recipe as written (tests start from it). */
export const tinyAgentPyInput = {
  name: 'tiny-agent-py',
  seed: 0,
  tasks: [
    {
      name: 'calc-agent-py',
      agent: 'recipes/agents/calc_agent.py',
      instances: 'recipes/agents/calc-instances.jsonl',
      evalInstances: 'recipes/agents/calc-eval.jsonl',
      concurrency: 4,
      timeoutS: 60,
      reward: 'recipes/agents/calc-reward.ts',
    },
  ],
  model: { layers: 1, width: 32, heads: 2, contextLength: 1024 },
  sft: { epochs: 0 },
  rl: { groupSize: 2 },
  pipeline: { freshEngines: 1, staleEngines: 1, rho: 0.5, concurrency: 4, maxTurns: 2, maxNewTokens: 24 },
  triad: { adaptiveTasks: false, stepReward: { enabled: false }, trainRewardModel: false },
  evaluation: { every: 2, k: 2, instancesPerTask: 2 },
  checkpoints: { every: 2, keep: 1 },
  budget: { maxSteps: 3, maxMinutes: 1.5 },
} satisfies RecipeInput

export default defineRecipe(tinyAgentPyInput)
