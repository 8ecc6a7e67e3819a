import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { RunFileFormatError } from './errors.ts'
import { type RunDir, writeNewFile } from './run-dir.ts'

/**
 * One held-out instance's result in an evaluation file: `successes` of its `k` samples. In the
 * end-of-run file, `checkpoint` says which of its two checkpoints (`sft`, `step-<n>`).
 */
export const EvalInstanceSchema = z.object({
  checkpoint: z.string().optional(),
  task: z.string(),
  difficulty: z.number().int(),
  /** Index in the task's eval split. */
  index: z.number().int().nonnegative(),
  k: z.number().int().positive(),
  successes: z.number().int().nonnegative(),
})
export type EvalInstance = z.infer<typeof EvalInstanceSchema>

/**
 * A paired difference of avg@k between two checkpoints on the same instances (`b` minus `a`), per
 * task and for the mean over tasks (`task` `mean`), with its standard error (`pairedDifference`).
 */
export const EvalPairedSchema = z.object({
  /** The checkpoint subtracted (`sft`). */
  a: z.string(),
  /** The checkpoint compared with it (`step-<n>`). */
  b: z.string(),
  task: z.string(),
  difficulty: z.number().int(),
  n: z.number().int().nonnegative(),
  avg_at_k_diff: z.number(),
  avg_at_k_diff_se: z.number(),
})
export type EvalPaired = z.infer<typeof EvalPairedSchema>

/**
 * One evaluation result, a JSON file under the run's `eval/`. `rows` is a table: one object per
 * row (for example per task and difficulty: `task`, `difficulty`, `n`, `avg_at_k`, `avg_at_k_se`,
 * `pass_at_k`, `pass_at_k_se`); `triad report` shows each file as one table with the union of
 * the rows' keys as columns.
 */
export const EvalResultSchema = z.object({
  /** Heading of the table (default: the file name). */
  title: z.string().optional(),
  /** Learner step of the evaluated weights. */
  step: z.number().int().nonnegative().optional(),
  /** Checkpoint that was evaluated (path relative to the run directory). */
  checkpoint: z.string().optional(),
  /** Samples per instance. */
  k: z.number().int().positive().optional(),
  /** Wall-clock time of the evaluation, ms since the Unix epoch. */
  time: z.number().optional(),
  /**
   * Base sampling seed: sample j of instance i was drawn with `seed + 1009 i + 7919 j`, so files
   * with the same seed, tasks and k played the same instances with the same seeds.
   */
  seed: z.number().int().optional(),
  /** Every instance's result (files written before triad kept them have none). */
  instances: z.array(EvalInstanceSchema).optional(),
  /** Paired differences between the file's checkpoints (the end-of-run file: final minus SFT). */
  paired: z.array(EvalPairedSchema).optional(),
  rows: z.array(z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]))),
})
export type EvalResult = z.infer<typeof EvalResultSchema>

/** The eval file name of a run's end-of-run evaluation written at `ms`: `final-<ms>`. */
export const finalEvalName = (ms: number) => `final-${ms}`

/** True for the file name (with `.json`) of an end-of-run evaluation, `final-<ms>.json`. */
export const isFinalEvalFile = (file: string) => /^final-\d+\.json$/.test(file)

/** The file of the evaluation result `name` of a run: `eval/<name>.json`. */
export const evalResultFile = (dir: RunDir, name: string) => join(dir.evalDir, `${name}.json`)

/**
 * Writes `eval/<name>.json` (for example `step-000100`).
 * @throws RunFileExistsError when it exists (results are never overwritten).
 */
export async function writeEvalResult(dir: RunDir, name: string, result: EvalResult): Promise<string> {
  const file = evalResultFile(dir, name)
  await writeNewFile(file, `${JSON.stringify(EvalResultSchema.parse(result), null, 2)}\n`)
  return file
}

/** The evaluation results of a run, sorted by file name, and the files that did not parse. */
export async function readEvalResults(
  dir: RunDir,
): Promise<{ results: { file: string; result: EvalResult }[]; errors: RunFileFormatError[] }> {
  const names = await readdir(dir.evalDir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[]
    throw err
  })
  const results: { file: string; result: EvalResult }[] = []
  const errors: RunFileFormatError[] = []
  for (const name of names.filter((n) => n.endsWith('.json')).sort()) {
    const file = join(dir.evalDir, name)
    try {
      const parsed = EvalResultSchema.safeParse(JSON.parse(await readFile(file, 'utf8')))
      if (parsed.success) results.push({ file, result: parsed.data })
      else
        errors.push(
          new RunFileFormatError(file, `not an evaluation result: ${parsed.error.issues[0]?.message}`),
        )
    } catch (err) {
      errors.push(new RunFileFormatError(file, 'not valid JSON', err))
    }
  }
  return { results, errors }
}
