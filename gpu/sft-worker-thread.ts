/**
 * The body of one SFT gradient worker thread (see `SftWorkers`): its own tensor backend and its own
 * copy of the model. For each request it loads the sent weights, computes the batch's loss and
 * gradients and posts them back (the gradient buffers are transferred, not copied).
 */
import { parentPort, workerData } from 'node:worker_threads'
import * as tf from '@tensorflow/tfjs'
import { InvariantError } from '../protocols/index.ts'
import { chooseBackend } from './backend.ts'
import { lossAndGrads } from './gradients.ts'
import { sftLoss } from './sft-loss.ts'
import type { SftWorkerData, SftWorkerReply, SftWorkerRequest } from './sft-worker-messages.ts'
import { createTransformer } from './transformer.ts'
import { setWeights } from './weights.ts'

const port = parentPort
if (!port) throw new InvariantError('sft-worker-thread.ts runs only as a worker thread (see SftWorkers)')
const data = workerData as SftWorkerData
await chooseBackend({ backend: data.backend, log: () => {} })
const model = createTransformer(data.config)
port.on('message', async (request: SftWorkerRequest) => {
  try {
    if (request.weights) setWeights(model, request.weights)
    const { loss, grads } = await lossAndGrads(model, () => sftLoss(model, request.batch))
    const out: Record<string, Float32Array> = {}
    // A copy: what `data()` returns may be a view of the backend's memory, which must not be transferred.
    for (const [name, g] of Object.entries(grads))
      out[name] = new Float32Array((await g.data()) as Float32Array)
    tf.dispose(grads)
    const reply: SftWorkerReply = { id: request.id, loss, grads: out }
    port.postMessage(
      reply,
      Object.values(out).map((a) => a.buffer as ArrayBuffer),
    )
  } catch (err) {
    const reply: SftWorkerReply = { id: request.id, error: err instanceof Error ? err.message : String(err) }
    port.postMessage(reply)
  }
})
port.postMessage({ ready: true })
