import { z } from 'zod'
import { defineMessage } from './message.ts'

/**
 * Weight sync. Weights are larger than a NATS message (1 MiB by default), so the learner writes
 * them to the JetStream object store bucket `weightsBucket(run)` under `key`, then announces the
 * version on `Subjects.weights(run, model)`. Engines load the object named in the announcement.
 */

/** Object store bucket of a run's weights. */
export const weightsBucket = (run: string) => `triad-${run}-weights`

/** `weights.published`: version `version` of `model` is in the object store under `key`. */
export const WeightsPublished = defineMessage(
  'weights.published',
  z.object({
    /** `policy` or `reward`. */
    model: z.string(),
    /** Learner step that produced the weights; 0 for the initial (or SFT) weights. */
    version: z.number().int().nonnegative(),
    bucket: z.string(),
    key: z.string(),
    /** Size of the object, bytes. */
    bytes: z.number().int().nonnegative(),
  }),
)

export const weightsMessages = [WeightsPublished] as const
