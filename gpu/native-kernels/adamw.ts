import * as tf from '@tensorflow/tfjs'
import { NativeBackend } from '../native-backend.ts'

/** Settings of one AdamW update, as `AdamW.step` computed them. */
export interface AdamWUpdate {
  lr: number
  beta1: number
  beta2: number
  eps: number
  /** Weight decay of this parameter (0 when it is not decayed). */
  decay: number
  /** `1 - beta1^t`. */
  bias1: number
  /** `1 - beta2^t`. */
  bias2: number
  /** Global gradient-clip factor (1 when not clipped). */
  clipScale: number
}

/**
 * The AdamW update of one parameter as one native pass (Loshchilov & Hutter 2019, Algorithm 2)
 * when the active backend is the native engine: the moments `m`, `v` (float32 variables of the
 * optimizer, never shared) are updated in place; the parameter gets new storage, so arrays read
 * from it before (a checkpoint being written) keep their values.
 * @param p, m, v, g tensors of one shape, float32.
 * @returns false (nothing done) when the backend is not native or a tensor is not float32 or a
 *   moment's storage is shared; the caller then runs the composed update.
 */
export function nativeAdamW(
  p: tf.Variable,
  m: tf.Variable,
  v: tf.Variable,
  g: tf.Tensor,
  u: AdamWUpdate,
): boolean {
  const backend = tf.backend()
  if (!(backend instanceof NativeBackend)) return false
  const pv = backend.values(p)
  const mv = backend.values(m)
  const vv = backend.values(v)
  const gv = backend.values(g)
  if (![pv, mv, vv, gv].every((a) => a instanceof Float32Array)) return false
  if (backend.refCount(m.dataId) !== 1 || backend.refCount(v.dataId) !== 1) return false
  const next = backend.allocate('float32', pv.length) as Float32Array
  next.set(pv as Float32Array)
  backend.addon.adamw(
    next,
    mv as Float32Array,
    vv as Float32Array,
    gv as Float32Array,
    next.length,
    u.lr,
    u.beta1,
    u.beta2,
    u.eps,
    u.decay,
    u.bias1,
    u.bias2,
    u.clipScale,
  )
  const t = tf.tensor(next, p.shape, 'float32')
  p.assign(t)
  t.dispose()
  return true
}
