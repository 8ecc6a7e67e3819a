import {
  computePolicyLossGrpoTcr,
  type GrpoTcrConfig,
  type LossResult,
  type PolicyLossInput,
  type PolicyMetric,
} from './grpo.ts'
import { defineRegistry, lookupVariant } from './registry.ts'

/**
 * A policy loss of the RL step: token log-probabilities, the ones the ratio is taken against,
 * advantages, mask and optional token weights in (`PolicyLossInput`, every tensor `[batch, seqLen]`
 * float32), the aggregated loss and its `PolicyMetric` metrics out (float32 scalars the caller
 * disposes). `config` is the step's loss settings (`RlStepConfig.loss`: clip range, dual clip,
 * aggregation).
 */
export type PolicyLoss = (input: PolicyLossInput, config: GrpoTcrConfig) => LossResult<PolicyMetric>

/** Names of the registered policy losses. */
export const PolicyLossName = { GrpoTcr: 'grpo-tcr' } as const
export type PolicyLossName = (typeof PolicyLossName)[keyof typeof PolicyLossName]

/** Registered policy losses, by name: `grpo-tcr` (`computePolicyLossGrpoTcr`, DemyAgent arXiv 2510.11701). */
export const PolicyLosses = defineRegistry<PolicyLoss>({
  [PolicyLossName.GrpoTcr]: computePolicyLossGrpoTcr,
})

/**
 * Looks a policy loss up by name.
 * @throws UnknownVariantError listing the valid names.
 */
export function getPolicyLoss(name: string): PolicyLoss {
  return lookupVariant('policy loss', PolicyLosses, name)
}
