/**
 * Type-level checks that the recipe's `rl` section (recipe-schema.ts, the single source of the
 * settings a user writes) and the lower layer's configs it sets (`RlStepConfig`, `AdamWConfig`,
 * `OverlongConfig` of gpu/) name the same fields. gpu/ may not import recipes/, so the check lives
 * here: a field added on one side only, and not listed below as an intended exception, makes
 * `npx tsc --noEmit -p .` fail naming it. Nothing here runs or is exported.
 */
import type { z } from 'zod'
import type { AdamWConfig, OverlongConfig, RlStepConfig } from '../gpu/index.ts'
import type { RlSchema } from './recipe-schema.ts'

type RecipeRl = z.infer<typeof RlSchema>

/**
 * `true` when `Missing` is empty, else `Missing` itself: assigning `true` to it fails and the
 * compiler's message names the fields.
 */
type NoneMissing<Missing> = [Missing] extends [never] ? true : Missing

/** The recipe's `rl` fields, `kl.beta` and `kl.estimator` lifted to the step's `beta` and `klEstimator`. */
type RecipeRlFields = Exclude<keyof RecipeRl, 'kl'> | 'beta' | 'klEstimator'

/** The lower layer's fields: the RL step's (its `loss` object's fields lifted) and AdamW's. */
type LowerFields = Exclude<keyof RlStepConfig, 'loss'> | keyof RlStepConfig['loss'] | keyof AdamWConfig

/**
 * Recipe fields that are no RL-step or AdamW setting, on purpose: `groupSize` is the rollout's
 * group size (the node's `rl.groupSize`), `lr` the learning rate each step is given
 * (`RlStepState.lr`, the node's `rl.lr`).
 */
type RecipeOnly = 'groupSize' | 'lr'

/**
 * Lower-layer fields no recipe sets, on purpose: `temperature` is the node's (from
 * `pipeline.temperature`, `nodeConfigOf`); `microBatchTokens` the learner's own split of a batch;
 * AdamW's `beta1`, `beta2`, `eps` keep their defaults; `decay` is a callback (which parameters
 * decay), not a setting.
 */
type LowerOnly = 'temperature' | 'microBatchTokens' | 'beta1' | 'beta2' | 'eps' | 'decay'

// A recipe rl field that goes nowhere below.
const _recipeFieldsGoSomewhere: NoneMissing<Exclude<RecipeRlFields, RecipeOnly | LowerFields>> = true
// A lower-layer field the recipe cannot set.
const _lowerFieldsAreSet: NoneMissing<Exclude<LowerFields, LowerOnly | RecipeRlFields>> = true
// `rl.kl` holds exactly the two fields lifted above.
const _klLifted: NoneMissing<Exclude<keyof RecipeRl['kl'], 'beta' | 'estimator'>> = true
// `rl.overlong` is `OverlongConfig` and its switch (`enabled`: the step gets no `overlong` when off).
const _overlongRecipe: NoneMissing<Exclude<keyof RecipeRl['overlong'], keyof OverlongConfig | 'enabled'>> =
  true
const _overlongLower: NoneMissing<Exclude<keyof OverlongConfig, keyof RecipeRl['overlong']>> = true
// `rl.offPolicy` is the step's `offPolicy`, field for field.
type OffPolicyLower = keyof NonNullable<RlStepConfig['offPolicy']>
const _offPolicyRecipe: NoneMissing<Exclude<keyof RecipeRl['offPolicy'], OffPolicyLower>> = true
const _offPolicyLower: NoneMissing<Exclude<OffPolicyLower, keyof RecipeRl['offPolicy']>> = true
