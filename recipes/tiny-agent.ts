/**
 * Tiny agent run: the calc agent program (`recipes/agents/calc-agent.ts`, written against the
 * official `openai` package, no triad import) trained through the run's agent gateway at the tiny
 * setting. No cold start (an agent task has no scripted expert) and no dynamic triad; the agent
 * rewards its own episodes. For the end-to-end test of the agent path; it does not learn.
 *
 *   triad run recipes/tiny-agent.ts
 */
import { defineRecipe } from './define-recipe.ts'
import type { RecipeInput } from './recipe-schema.ts'

/** The tiny agent recipe as written (tests start from it). */
export const tinyAgentInput = {
  name: 'tiny-agent',
  seed: 0,
  tasks: [
    {
      name: 'calc-agent',
      agent: 'recipes/agents/calc-agent.ts',
      instances: 'recipes/agents/calc-instances.jsonl',
      evalInstances: 'recipes/agents/calc-eval.jsonl',
      concurrency: 4,
      timeoutS: 60,
    },
  ],
  model: { layers: 1, width: 32, heads: 2, contextLength: 1024 },
  sft: { epochs: 0 },
  rl: { groupSize: 2 },
  pipeline: { freshEngines: 1, staleEngines: 1, rho: 0.5, concurrency: 4, maxTurns: 2, maxNewTokens: 24 },
  triad: { adaptiveTasks: false, stepReward: { enabled: false }, trainRewardModel: false },
  evaluation: { every: 0, k: 2, instancesPerTask: 2 },
  checkpoints: { every: 2, keep: 1 },
  budget: { maxSteps: 3, maxMinutes: 1.5 },
} satisfies RecipeInput

export default defineRecipe(tinyAgentInput)
