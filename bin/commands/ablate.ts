import { writeFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import cliProgress from 'cli-progress'
import Table from 'cli-table3'
import type { Command } from 'commander'
import type { AblationFile, VarySpec } from '../ablation/index.ts'
import { CliError, UsageError } from '../errors.ts'
import { integerOption } from '../numeric-option.ts'
import { renderAblationHtml } from '../report/ablation-html.ts'
import { SIGNAL_EXIT_CODES, toCliError } from './run.ts'

/** Options of `triad ablate` (numbers parsed and bounded by commander). */
export interface AblateOptions {
  /** `FIELD=V1,V2`, one per `--vary`. */
  vary: string[]
  seeds: number
  /** The ablation's folder (default `ablations/<recipe name>`). */
  out?: string
  inProcess?: boolean
}

/** The page beside `ablation.json`. */
export const ABLATION_PAGE = 'ablation.html'

/** `[████░░░░] 3/8 runs`: the progress over runs. */
function progressLine(done: number, total: number, current?: string, startedMs?: number): string {
  const barsize = 24
  const bar = cliProgress.Format.BarFormat(total > 0 ? done / total : 1, {
    barsize,
    barCompleteString: '\u2588'.repeat(barsize),
    barIncompleteString: '\u2591'.repeat(barsize),
    barGlue: '',
  } as never)
  const elapsed = startedMs === undefined ? '' : `  ${((Date.now() - startedMs) / 60_000).toFixed(1)} min`
  return `ablation ${bar} ${done}/${total} runs${current ? `  now: ${current}` : ''}${elapsed}`
}

/** The summary printed at the end: the mean over tasks of each variant. */
function summaryTable(file: AblationFile): string {
  const table = new Table({
    head: ['variant', 'seeds', `mean avg@${file.k}`, 'Δ vs baseline (paired)', 'z'],
    style: { head: [], border: [], compact: true },
  })
  const f = (v: number | null, se: number | null, signed = false) =>
    v === null ? '-' : `${signed && v >= 0 ? '+' : ''}${v.toFixed(3)} ± ${(se ?? 0).toFixed(3)}`
  for (const r of file.rows.filter((row) => row.task === 'mean'))
    table.push([
      r.variant,
      r.seeds,
      f(r.avg_at_k, r.avg_at_k_se),
      r.variant === 'baseline' ? '' : f(r.diff, r.diff_se, true),
      r.diff !== null && r.diff_se ? (r.diff / r.diff_se).toFixed(1) : '',
    ])
  return table.toString()
}

/**
 * `triad ablate RECIPE --vary FIELD=V1,V2 [--vary ...] --seeds N [--out DIR] [--in-process]`:
 * plans the variants (`planAblation`: the baseline and each value, one field at a time), checks
 * them all, then runs them (`runAblation`), writing `ablation.json` and `ablation.html` after each
 * run, with a progress line over runs. Exit 0 when every run has a result, 1 when some failed,
 * 130/143 when interrupted.
 * @throws UsageError (exit 2, nothing run) for a field the recipe does not have, a value its schema
 *   refuses, other bad options, and a recipe that does not load or validate (the recipe errors map
 *   to exit 2 in `exitCodeOf`).
 */
export async function runAblate(recipeFile: string, o: AblateOptions): Promise<void> {
  const r = { ...(await import('../../recipes/index.ts')), ...(await import('../ablation/index.ts')) }
  const catalog = r.builtinTaskCatalog()
  let source: Awaited<ReturnType<typeof r.loadRecipeSource>>
  try {
    source = await r.loadRecipeSource(recipeFile, { catalog })
  } catch (err) {
    throw await toCliError(err)
  }
  if (o.vary.length === 0) throw new UsageError('give at least one --vary FIELD=V1,V2 (rl.eps_high=0.2)')
  let plan: ReturnType<typeof r.planAblation>
  try {
    const varies: VarySpec[] = o.vary.map((v) => r.parseVary(v))
    plan = r.planAblation(source.input, varies, o.seeds, catalog)
  } catch (err) {
    if (err instanceof r.AblationInputError || err instanceof r.RecipeFieldError)
      throw new UsageError(err instanceof r.RecipeFieldError ? `--vary ${err.message}` : err.message, {
        cause: err,
      })
    throw err
  }
  const out = o.out ?? join('ablations', plan.base.name)
  try {
    r.checkAblationOut(plan, out, catalog)
  } catch (err) {
    if (err instanceof r.AblationInputError) throw new UsageError(err.message, { cause: err })
    throw err
  }
  const say = (line: string) => process.stdout.write(`${line}\n`)
  for (const line of plan.skipped) say(line)
  const total = plan.variants.length * plan.seeds.length
  const seeds = plan.seeds.length === 1 ? 'seed' : 'seeds'
  say(
    `ablation of ${plan.base.name}: ${plan.variants.length} variants (one field at a time: ${plan.variants.map((v) => v.id).join(', ')}) x ${plan.seeds.length} ${seeds} (${plan.seeds.join(', ')}) = ${total} runs, in ${out}`,
  )
  const started = Date.now()
  const command = ['triad ablate', recipeFile, ...o.vary.map((v) => `--vary ${v}`), `--seeds ${o.seeds}`]
    .concat(o.out ? [`--out ${o.out}`] : [])
    .concat(o.inProcess ? ['--in-process'] : [])
    .join(' ')
  let outcome: Awaited<ReturnType<typeof r.runAblation>>
  try {
    outcome = await r.runAblation(plan, {
      out,
      recipeFile,
      command,
      catalog,
      inProcess: o.inProcess === true,
      log: say,
      onProgress: (p) => say(progressLine(p.done, p.total, p.current, started)),
      onTable: (file) => writeFileSync(join(out, ABLATION_PAGE), renderAblationHtml(file)),
    })
  } catch (err) {
    if (err instanceof r.AblationInputError) throw new UsageError(err.message, { cause: err })
    throw await toCliError(err)
  }
  say(summaryTable(outcome.file))
  say(
    `written ${relative(process.cwd(), join(out, 'ablation.json'))} and ${relative(process.cwd(), join(out, ABLATION_PAGE))}`,
  )
  if (outcome.signal) {
    const done = outcome.file.runs.filter(
      (run) => plan.seeds.includes(run.seed) && run.status === r.AblationRunStatus.Done,
    ).length
    say(
      `stopped by ${outcome.signal}: ${done} of ${total} runs done; the same command goes on with the ${total - done} left`,
    )
    process.exitCode = SIGNAL_EXIT_CODES[outcome.signal]
    return
  }
  const failed = outcome.file.runs.filter((run) => run.status === 'failed')
  if (failed.length)
    throw new CliError(
      `${failed.length} of ${total} runs failed (the others have their results; run the command again to retry them): ${failed.map((f) => `${f.variant} seed ${f.seed}: ${f.reason}`).join('; ')}`,
    )
}

/** Collects a repeatable option's values. */
const collect = (value: string, previous: string[]) => [...previous, value]

export function registerAblate(program: Command): void {
  program
    .command('ablate')
    .description(
      'run variants of a recipe (one field at a time) at several seeds, all evaluated on the same held-out instances, and tabulate each against the baseline',
    )
    .argument('<recipe>', 'the baseline recipe file (recipes/ablation.ts)')
    .option(
      '--vary <field=values>',
      'a recipe field and the values to try (rl.eps_high=0.2,0.28); repeatable',
      collect,
      [],
    )
    .requiredOption('--seeds <n>', 'seeds per variant: the recipe seed, +1, ...', integerOption({ min: 1 }))
    .option(
      '--out <dir>',
      'the ablation folder (default ablations/<recipe name>); running the command again resumes it',
    )
    .option('--in-process', 'run each triad run in one process on the in-process transport')
    .action(async (recipeFile: string, o: AblateOptions) => runAblate(recipeFile, o))
}
