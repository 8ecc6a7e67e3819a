import { ConfigError } from './errors.ts'

/** A learning-rate schedule: optimizer step (0-based) to learning rate. */
export type LrSchedule = (step: number) => number

/** Settings of `warmupCosine`. */
export interface WarmupCosineConfig {
  /** Learning rate reached at the end of warm-up. */
  peakLr: number
  /** Steps of linear warm-up from `peakLr / warmupSteps` to `peakLr`; 0 for none. */
  warmupSteps: number
  /** Total steps; the cosine reaches `minLr` here and stays there after. */
  totalSteps: number
  /** Final learning rate; default `0.1 * peakLr`. */
  minLr?: number
}

/**
 * Linear warm-up, then cosine decay to `minLr` (SGDR without restarts: Loshchilov & Hutter 2017,
 * eq. 5): `lr(t) = min + (peak - min) * (1 + cos(pi * (t - warmup) / (total - warmup))) / 2`.
 * @throws ConfigError on a negative or inconsistent setting.
 */
export function warmupCosine(config: WarmupCosineConfig): LrSchedule {
  const { peakLr, warmupSteps, totalSteps } = config
  const minLr = config.minLr ?? 0.1 * peakLr
  if (!(peakLr > 0)) throw new ConfigError('peakLr', peakLr, 'must be > 0')
  if (!(minLr >= 0 && minLr <= peakLr)) throw new ConfigError('minLr', minLr, 'must be in [0, peakLr]')
  if (!Number.isInteger(warmupSteps) || warmupSteps < 0)
    throw new ConfigError('warmupSteps', warmupSteps, 'must be a non-negative integer')
  if (!Number.isInteger(totalSteps) || totalSteps < warmupSteps)
    throw new ConfigError('totalSteps', totalSteps, 'must be an integer >= warmupSteps')
  return (step: number) => {
    if (step < warmupSteps) return (peakLr * (step + 1)) / warmupSteps // linear warm-up
    if (step >= totalSteps) return minLr
    const progress = (step - warmupSteps) / Math.max(1, totalSteps - warmupSteps)
    return minLr + ((peakLr - minLr) * (1 + Math.cos(Math.PI * progress))) / 2 // SGDR eq. 5
  }
}

/** A constant learning rate. */
export function constantLr(lr: number): LrSchedule {
  if (!(lr > 0)) throw new ConfigError('lr', lr, 'must be > 0')
  return () => lr
}
