import { attentionKernel } from './attention.ts'
import { ELEMENTWISE_KERNELS } from './elementwise.ts'
import { gatherV2Kernel, unsortedSegmentSumKernel } from './gather.ts'
import { grpoTcrTokenLossGradKernel, grpoTcrTokenLossKernel } from './grpo-tcr.ts'
import { batchMatMulKernel } from './matmul.ts'
import type { NativeKernel } from './native-kernel.ts'
import {
  argMaxKernel,
  argMinKernel,
  maxKernel,
  meanKernel,
  minKernel,
  prodKernel,
  sumKernel,
} from './reduce.ts'
import { rmsNormGradKernel, rmsNormKernel } from './rms-norm.ts'
import { ropeKernel } from './rope.ts'
import {
  concatKernel,
  padV2Kernel,
  sliceKernel,
  splitVKernel,
  stridedSliceKernel,
  tileKernel,
} from './slice.ts'
import { softmaxKernel } from './softmax.ts'
import { swigluGradKernel, swigluKernel } from './swiglu.ts'
import { tokenEntropyKernel, tokenLogprobGradKernel, tokenLogprobKernel } from './token-logprob.ts'
import { transposeKernel } from './transpose.ts'

/** Every kernel the native engine runs in compiled code (the rest are the cpu backend's). */
export const NATIVE_KERNELS: readonly NativeKernel[] = [
  batchMatMulKernel,
  attentionKernel,
  rmsNormKernel,
  rmsNormGradKernel,
  swigluKernel,
  swigluGradKernel,
  ropeKernel,
  tokenLogprobKernel,
  tokenLogprobGradKernel,
  tokenEntropyKernel,
  grpoTcrTokenLossKernel,
  grpoTcrTokenLossGradKernel,
  transposeKernel,
  sliceKernel,
  splitVKernel,
  stridedSliceKernel,
  concatKernel,
  tileKernel,
  padV2Kernel,
  gatherV2Kernel,
  unsortedSegmentSumKernel,
  sumKernel,
  meanKernel,
  maxKernel,
  minKernel,
  prodKernel,
  argMaxKernel,
  argMinKernel,
  softmaxKernel,
  ...ELEMENTWISE_KERNELS,
]
