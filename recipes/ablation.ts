/**
 * Ablation: the quickstart's setting (calc, sql and maze with the whole triad: the same model,
 * SFT, GRPO-TCR and pipeline) as the baseline of `triad ablate`, with a budget of 30 RL learner
 * steps a run (measured on 2-core machines with no other load: 7.1 to 7.7 minutes a run on an Intel
 * Xeon; on an AMD EPYC a median of 8.1, of which 6.4 the RL phase; docs/ablations/README.md). The
 * budget is steps, not minutes, so that the variants compared get the same number of updates whatever
 * else the machine is doing;
 * `maxMinutes` 20 is only a guard. `triad ablate` makes the cold start (SFT and the reward model's)
 * once per seed and copies it into each variant's run; then the final checkpoint is evaluated on
 * the same 32 held-out instances per task as every other run. The claims it checks, each one `--vary` of a quickstart setting, are in
 * docs/ablations/README.md.
 *
 *   triad ablate recipes/ablation.ts --vary rl.eps_high=0.2 --seeds 3
 */
import { defineRecipe } from './define-recipe.ts'
import { quickstartInput } from './quickstart.ts'

export default defineRecipe({
  ...quickstartInput,
  name: 'ablation',
  budget: { maxSteps: 30, maxMinutes: 20 },
})
