/**
 * Quickstart for an agent program: the calc agent (`recipes/agents/calc-agent.ts`, written against
 * the official `openai` package, no triad import) trained through the run's agent gateway at the
 * quickstart's setting (its model, cold start, GRPO-TCR settings, pipeline and budget), and
 * measured on held-out questions it never trains on (`recipes/agents/calc-eval.jsonl`): the
 * end-of-run evaluation plays them with the agent's own program against the cold-start checkpoint
 * and the final one and reports the paired difference with its standard error
 * (docs/gateway.md#held-out-evaluation).
 *
 *   triad run recipes/quickstart-agent.ts
 *
 * The agent has no scripted expert, so the cold start is the built-in `calc` task's expert
 * episodes: the agent offers the same tools (`calculator`, `submit`) with the same system prompt,
 * so the SFT policy already speaks them. `calc` stays in the mix at a quarter of the agent's
 * weight. The dynamic triad's step rewards are off: the judge's cold start needs labelled steps,
 * and the agent's episodes have none.
 */
import { defineRecipe } from './define-recipe.ts'
import { quickstartInput } from './quickstart.ts'
import type { RecipeInput } from './recipe-schema.ts'

/** The agent quickstart as written. */
export const quickstartAgentInput = {
  ...quickstartInput,
  name: 'quickstart-agent',
  tasks: [
    {
      name: 'calc-agent',
      weight: 4,
      agent: 'recipes/agents/calc-agent.ts',
      instances: 'recipes/agents/calc-train.jsonl',
      evalInstances: 'recipes/agents/calc-eval.jsonl',
      concurrency: 16,
      timeoutS: 120,
    },
    { name: 'calc', weight: 1 },
  ],
  // The cold start's only data is calc's expert episodes: three times the quickstart's per task
  // gives it as much SFT as the quickstart's three tasks (228 steps at 512 left calc-agent at 0.10
  // held-out avg@8, docs/results/2026-12-06-quickstart-agent-cddc36d.md).
  sft: { ...quickstartInput.sft, expertTrajectoriesPerTask: 1536 },
  triad: { adaptiveTasks: false, stepReward: { enabled: false }, trainRewardModel: false },
} satisfies RecipeInput

export default defineRecipe(quickstartAgentInput)
