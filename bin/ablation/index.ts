/** The ablation runner of `triad ablate`: the plan of variants, the runs, and the table of claims. */
export {
  type AblationPlan,
  type AblationVariant,
  BASELINE,
  parseVary,
  parseVaryValue,
  planAblation,
  SFT_FIELDS,
  touchesSft,
  type VarySpec,
  variantInput,
  variantRecipe,
} from './ablation-plan.ts'
export {
  ABLATION_FILE,
  type AblationFile,
  type AblationOutcome,
  checkAblationOut,
  machine,
  machineOf,
  type RunAblationOptions,
  runAblation,
} from './ablation-runner.ts'
export { type AblationRow, type AblationRun, AblationRunStatus, ablationTable } from './ablation-table.ts'
export { AblationInputError } from './errors.ts'
