import { Worker } from 'node:worker_threads'
import { ConfigError } from './errors.ts'
import type { SftBatch } from './sft-batch.ts'
import type { SftWorkerData, SftWorkerReply, SftWorkerRequest } from './sft-worker-messages.ts'
import type { FullTransformerConfig } from './transformer-config.ts'

/** Thrown when an SFT gradient worker thread fails (its error, or the thread's exit). */
export class SftWorkerError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(`SFT gradient worker: ${message}`, options)
    this.name = 'SftWorkerError'
  }
}

/** One batch's result from a worker: masked token-mean loss (nats/token) and float32 gradients by parameter name. */
export interface WorkerGradients {
  loss: number
  grads: Record<string, Float32Array>
}

interface Pending {
  resolve: (value: WorkerGradients) => void
  reject: (err: Error) => void
}

class GradientThread {
  private readonly pending = new Map<number, Pending>()
  private nextId = 0
  private failure: Error | undefined

  constructor(readonly worker: Worker) {
    worker.on('message', (reply: SftWorkerReply | { ready: true }) => {
      if ('ready' in reply) return
      const p = this.pending.get(reply.id)
      if (!p) return
      this.pending.delete(reply.id)
      if ('error' in reply) p.reject(new SftWorkerError(reply.error))
      else p.resolve({ loss: reply.loss, grads: reply.grads })
    })
    const fail = (err: Error) => {
      this.failure = err
      for (const p of this.pending.values()) p.reject(err)
      this.pending.clear()
    }
    worker.on('error', (err) => fail(new SftWorkerError(err.message, { cause: err })))
    worker.on('exit', (code) => fail(new SftWorkerError(`thread exited with code ${code}`)))
  }

  compute(batch: SftBatch, weights?: Record<string, Float32Array>): Promise<WorkerGradients> {
    if (this.failure) return Promise.reject(this.failure)
    const id = this.nextId++
    const request: SftWorkerRequest = weights ? { id, weights, batch } : { id, batch }
    return new Promise<WorkerGradients>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.worker.postMessage(request)
    })
  }
}

/**
 * Worker threads for data-parallel SFT on backends that compute on one core (wasm, cpu): each
 * thread holds its own copy of the model and computes the loss and gradients of one batch per
 * optimizer step, at the weights the caller sends, while the caller computes another batch on its
 * own thread. The caller combines the gradients and takes the optimizer step (`trainSft`).
 *
 * Each request carries the full float32 weights (`4 * parameterCount` bytes) unless unchanged.
 */
export class SftWorkers {
  private constructor(private readonly threads: GradientThread[]) {}

  /** Number of worker threads. */
  get size(): number {
    return this.threads.length
  }

  /**
   * Starts `count` threads, each on `backend` (a `BackendName`) with a model of `config`, and waits
   * until every one is ready.
   * @throws ConfigError when `count` is not a positive integer; SftWorkerError when a thread fails to start.
   */
  static async start(count: number, config: FullTransformerConfig, backend: string): Promise<SftWorkers> {
    if (!Number.isInteger(count) || count < 1)
      throw new ConfigError('count', count, 'must be a positive integer')
    // The thread's module is TypeScript: register tsx inside the thread before importing it (a
    // worker does not inherit the loader hooks the parent registered through tsx's API).
    const api = import.meta.resolve('tsx/esm/api')
    const entry = new URL('./sft-worker-thread.ts', import.meta.url).href
    const source = `import(${JSON.stringify(api)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}) })`
    const data: SftWorkerData = { config, backend }
    const threads: GradientThread[] = []
    try {
      for (let i = 0; i < count; i++) {
        const worker = new Worker(source, { eval: true, workerData: data })
        const ready = new Promise<void>((resolve, reject) => {
          const onMessage = (m: { ready?: boolean }) => {
            if (m.ready) {
              worker.off('message', onMessage)
              resolve()
            }
          }
          worker.on('message', onMessage)
          worker.once('error', (err) => reject(new SftWorkerError(err.message, { cause: err })))
          worker.once('exit', (code) =>
            reject(new SftWorkerError(`thread exited with code ${code} while starting`)),
          )
        })
        threads.push(new GradientThread(worker))
        await ready
      }
    } catch (err) {
      await Promise.all(threads.map((t) => t.worker.terminate()))
      throw err
    }
    return new SftWorkers(threads)
  }

  /**
   * Loss and gradients of `batch` on thread `index`, at `weights` (absent: the weights this thread
   * was last sent).
   * @throws SftWorkerError when the thread fails.
   */
  compute(index: number, batch: SftBatch, weights?: Record<string, Float32Array>): Promise<WorkerGradients> {
    const thread = this.threads[index]
    if (!thread) throw new ConfigError('index', index, `must be below ${this.threads.length}`)
    return thread.compute(batch, weights)
  }

  /** Stops every thread. */
  async close(): Promise<void> {
    await Promise.all(this.threads.map((t) => t.worker.terminate()))
  }
}

/**
 * Runs `body` with the worker threads a data-parallel SFT over `threads` threads needs (`threads -
 * 1` of them, each on `backend` with a model of `config`; none for one thread) and stops them
 * afterwards, whether `body` resolves or throws.
 * @throws SftWorkerError when a thread fails to start; whatever `body` throws.
 */
export async function withSftWorkers<T>(
  threads: number,
  config: FullTransformerConfig,
  backend: string,
  body: (workers: SftWorkers | undefined) => Promise<T>,
): Promise<T> {
  const workers = threads > 1 ? await SftWorkers.start(threads - 1, config, backend) : undefined
  try {
    return await body(workers)
  } finally {
    await workers?.close()
  }
}
