/**
 * Names of triad's fused kernels: one kernel where tfjs would run several ops, with a gradient
 * kernel of its own. A backend that registers them (the native engine does) runs them; on any
 * other `fused-ops.ts` composes the same math from tfjs ops.
 */
export const FusedKernel = {
  RmsNorm: 'TriadRmsNorm',
  RmsNormGrad: 'TriadRmsNormGrad',
  Swiglu: 'TriadSwiglu',
  SwigluGrad: 'TriadSwigluGrad',
  Rope: 'TriadRope',
  TokenLogprob: 'TriadTokenLogprob',
  TokenLogprobGrad: 'TriadTokenLogprobGrad',
  /** The per-token GRPO-TCR loss (`computeTokenLossGrpoTcr` in `grpo.ts`). */
  GrpoTcrTokenLoss: 'TriadGrpoTcrTokenLoss',
  GrpoTcrTokenLossGrad: 'TriadGrpoTcrTokenLossGrad',
  /** Forward only: the entropy of rows of logits whose entropy takes no gradient (`tokenEntropy`). */
  TokenEntropy: 'TriadTokenEntropy',
  /** Forward only: attention of a pass that takes no gradient (`fusedAttention` in `fused-ops.ts`). */
  Attention: 'TriadAttention',
} as const
export type FusedKernel = (typeof FusedKernel)[keyof typeof FusedKernel]
