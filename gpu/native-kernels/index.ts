import type { NativeKernel } from '../native-backend.ts'
import { batchMatMulKernel } from './matmul.ts'

/** Every kernel the native engine runs in compiled code (the rest are the cpu backend's). */
export const NATIVE_KERNELS: readonly NativeKernel[] = [batchMatMulKernel]
