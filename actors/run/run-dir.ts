import { appendFile, link, mkdir, readFile, stat, unlink, writeFile } from 'node:fs/promises'
import { basename, join, resolve } from 'node:path'
import { type Clock, systemClock } from '../runtime/index.ts'
import { NotARunDirError, RunFileExistsError, RunsDirError } from './errors.ts'

/**
 * The files of one run, `runs/<name>-<timestamp>/`:
 * `recipe.json` (the resolved recipe), `metrics.jsonl` (one `metrics.report` per line),
 * `tensorboard/` (the same metrics as TensorBoard event files), `checkpoints/`, `eval/` (one JSON
 * file per evaluation) and `logs/`.
 */
export interface RunDir {
  /** Run id: the directory's name, also the `<run>` token of every NATS subject of the run. */
  id: string
  /** Absolute path of the directory. */
  path: string
  recipeFile: string
  metricsFile: string
  checkpointsDir: string
  evalDir: string
  logsDir: string
  /** TensorBoard event files, one folder per reporter (`tensorboard/<role>/<id>/`). */
  tensorboardDir: string
}

/** The file name that marks a directory as a triad run. */
export const RECIPE_FILE = 'recipe.json'

/** The paths of the run directory at `path` (nothing is checked or created). */
export function runDirPaths(path: string): RunDir {
  const abs = resolve(path)
  return {
    id: basename(abs),
    path: abs,
    recipeFile: join(abs, RECIPE_FILE),
    metricsFile: join(abs, 'metrics.jsonl'),
    checkpointsDir: join(abs, 'checkpoints'),
    evalDir: join(abs, 'eval'),
    logsDir: join(abs, 'logs'),
    tensorboardDir: join(abs, 'tensorboard'),
  }
}

/** `YYYYMMDD-HHMMSS` in UTC, for run directory names. */
export function runTimestamp(ms: number): string {
  const iso = new Date(ms).toISOString() // 2026-11-29T18:21:47.123Z
  return `${iso.slice(0, 10).replaceAll('-', '')}-${iso.slice(11, 19).replaceAll(':', '')}`
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code

/** Why `mkdir -p` of a runs folder failed, by error code, in words (`RunsDirError`). */
const RUNS_DIR_REASONS: Record<string, string> = {
  EEXIST: 'it is a file, not a folder',
  ENOTDIR: 'a folder on its path is a file',
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  EROFS: 'the file system is read-only',
}

/** Options of `createRunDir`. */
export interface CreateRunDirOptions {
  /** Parent folder of all runs (created when missing), e.g. `runs`. */
  runsDir: string
  /** Run name from the recipe (one NATS token). */
  name: string
  /** The resolved recipe, written as `recipe.json`. */
  recipe: unknown
  clock?: Clock
}

/**
 * Makes a new run directory `<runsDir>/<name>-<timestamp>/` with `recipe.json`, an empty
 * `metrics.jsonl` and the `checkpoints/`, `eval/` and `logs/` folders. When a directory of that
 * name exists already (two runs in one second), `-2`, `-3`, ... is appended: an existing run is
 * never touched.
 * @throws RunsDirError when `runsDir` is a file, lies under one, or may not be written;
 *   RunFileExistsError when no free name is found.
 */
export async function createRunDir(options: CreateRunDirOptions): Promise<RunDir> {
  const clock = options.clock ?? systemClock
  await mkdir(options.runsDir, { recursive: true }).catch((err: unknown) => {
    const reason = RUNS_DIR_REASONS[errno(err) ?? '']
    throw reason ? new RunsDirError(options.runsDir, reason, err) : err
  })
  const base = `${options.name}-${runTimestamp(clock.now())}`
  let dir: RunDir | undefined
  for (let n = 1; n <= 100 && !dir; n++) {
    const candidate = runDirPaths(join(options.runsDir, n === 1 ? base : `${base}-${n}`))
    try {
      await mkdir(candidate.path) // not recursive: fails when it exists
      dir = candidate
    } catch (err) {
      if (errno(err) !== 'EEXIST') throw err
    }
  }
  if (!dir) throw new RunFileExistsError(join(options.runsDir, base))
  await fillRunDir(dir, options.recipe)
  return dir
}

/** The files and folders of a new run in its (made, empty) directory. */
async function fillRunDir(dir: RunDir, recipe: unknown): Promise<void> {
  for (const sub of [dir.checkpointsDir, dir.evalDir, dir.logsDir]) await mkdir(sub)
  await writeNewFile(dir.recipeFile, `${JSON.stringify(recipe, null, 2)}\n`)
  await writeNewFile(dir.metricsFile, '')
}

/**
 * Makes a new run directory at `path` exactly (its parent made when missing), laid out as
 * `createRunDir` lays one out: for callers that name their runs themselves (`triad ablate`), then
 * run them with `triad run --resume`. The directory's name is the run id: one NATS token.
 * @throws RunFileExistsError when `path` exists (an existing run is never touched).
 */
export async function createRunDirAt(path: string, recipe: unknown): Promise<RunDir> {
  const dir = runDirPaths(path)
  await mkdir(resolve(dir.path, '..'), { recursive: true })
  await mkdir(dir.path).catch((err: unknown) => {
    if (errno(err) === 'EEXIST') throw new RunFileExistsError(dir.path, err)
    throw err
  })
  await fillRunDir(dir, recipe)
  return dir
}

/**
 * Writes a file that must not exist yet, atomically: the data goes to a temporary file next to it,
 * which is then hard-linked to `path` (the link fails when `path` exists) and removed. A process
 * killed mid-write leaves at most the temporary file, never a partial `path`.
 * @throws RunFileExistsError when it exists.
 */
export async function writeNewFile(path: string, data: string): Promise<void> {
  const tmp = `${path}.${process.pid}.tmp`
  await writeFile(tmp, data)
  try {
    await link(tmp, path)
  } catch (err) {
    if (errno(err) === 'EEXIST') throw new RunFileExistsError(path, err)
    throw err
  } finally {
    await unlink(tmp).catch(() => undefined)
  }
}

/** An existing run directory and its stored recipe (parsed JSON, not yet validated). */
export interface OpenedRun {
  dir: RunDir
  recipe: unknown
}

/**
 * Opens an existing run directory (for `--resume` and `triad report`). Missing sub-folders are
 * created; no existing file is changed.
 * @throws NotARunDirError when `path` does not exist, is not a directory, has no `recipe.json`,
 *   or its `recipe.json` is not JSON: "X is not a triad run directory (no recipe.json)".
 */
export async function openRunDir(path: string, options: { create?: boolean } = {}): Promise<OpenedRun> {
  const dir = runDirPaths(path)
  const info = await stat(dir.path).catch((err: unknown) => {
    throw new NotARunDirError(path, errno(err) === 'ENOENT' ? 'it does not exist' : String(err), err)
  })
  if (!info.isDirectory()) throw new NotARunDirError(path, 'it is not a directory')
  let text: string
  try {
    text = await readFile(dir.recipeFile, 'utf8')
  } catch (err) {
    throw new NotARunDirError(path, `no ${RECIPE_FILE}`, err)
  }
  let recipe: unknown
  try {
    recipe = JSON.parse(text)
  } catch (err) {
    throw new NotARunDirError(path, `${RECIPE_FILE} is not valid JSON`, err)
  }
  if (options.create !== false)
    for (const sub of [dir.checkpointsDir, dir.evalDir, dir.logsDir]) await mkdir(sub, { recursive: true })
  return { dir, recipe }
}

/**
 * Appends one JSON line to `logs/<name>.jsonl` (run events: start, resume, stop). Appends only.
 */
export async function appendRunLog(dir: RunDir, name: string, event: Record<string, unknown>): Promise<void> {
  await mkdir(dir.logsDir, { recursive: true })
  await appendFile(join(dir.logsDir, `${name}.jsonl`), `${JSON.stringify(event)}\n`)
}
