import type { SftBatch } from './sft-batch.ts'
import type { FullTransformerConfig } from './transformer-config.ts'

/*
 * The messages between `SftWorkers` (the parent, `sft-workers.ts`) and each gradient worker thread
 * (`sft-worker-thread.ts`).
 */

/** What the parent passes as `workerData`. */
export interface SftWorkerData {
  /** The model's config (weights come with each request). */
  config: FullTransformerConfig
  /** Backend to activate, the parent's own (a `BackendName`). */
  backend: string
}

/** A request: the weights to compute at (absent: the previous request's) and the batch. */
export interface SftWorkerRequest {
  id: number
  weights?: Record<string, Float32Array>
  batch: SftBatch
}

/** A reply: the batch's loss and gradients by parameter name, or the error that stopped it. */
export type SftWorkerReply =
  | { id: number; loss: number; grads: Record<string, Float32Array> }
  | { id: number; error: string }
