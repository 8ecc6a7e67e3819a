import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { RunFileFormatError } from './errors.ts'
import { type RunDir, writeNewFile } from './run-dir.ts'

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
