import { readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { BackendUnavailableError, ThreadCountError, UnknownBackendError } from '../gpu/index.ts'
import { registerAblate } from './commands/ablate.ts'
import { registerBench } from './commands/bench.ts'
import { registerCollect } from './commands/collect.ts'
import { registerDemo } from './commands/demo.ts'
import { registerEnv } from './commands/env.ts'
import { registerEval } from './commands/eval.ts'
import { registerExport } from './commands/export.ts'
import { registerGenerate } from './commands/generate.ts'
import { registerMetrics } from './commands/metrics.ts'
import { registerModel } from './commands/model.ts'
import { registerMonitor } from './commands/monitor.ts'
import { registerReport } from './commands/report.ts'
import { registerRun } from './commands/run.ts'
import { registerSandbox } from './commands/sandbox.ts'
import { registerServe } from './commands/serve.ts'
import { registerStatus } from './commands/status.ts'
import { registerTrajectories } from './commands/trajectories.ts'
import { registerWorker } from './commands/worker.ts'
import { CliError, ExitCode, exitCodeOf, isBadInput, oneLine } from './errors.ts'
import { hintHelpAfterErrors } from './help-hint.ts'

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string
}

const program = new Command()
program
  .name('triad')
  .description('agentic reinforcement learning on supervised actors over NATS')
  .version(pkg.version)

registerRun(program)
registerAblate(program)
registerMonitor(program)
registerReport(program)
registerMetrics(program)
registerTrajectories(program)
registerCollect(program)
registerEval(program)
registerGenerate(program)
registerServe(program)
registerExport(program)
registerModel(program)

registerWorker(program)

registerStatus(program)

registerBench(program)
registerSandbox(program)
registerDemo(program)
registerEnv(program)
hintHelpAfterErrors(program)

try {
  await program.parseAsync(process.argv)
} catch (err) {
  // Every command ends the same way for the same fault (the README's table of exit statuses); a
  // usage error is one line.
  if (err instanceof CliError) {
    const code = exitCodeOf(err)
    process.stderr.write(`triad: ${code === ExitCode.usage ? oneLine(err.message) : err.message}\n`)
    process.exit(code)
  }
  if (err instanceof CommanderError) process.exit(err.exitCode)
  // A backend or thread setting that cannot work (TRIAD_BACKEND, TRIAD_THREADS, --backend): its
  // message names the setting and what to give; bad input exits 2, a missing backend 1.
  if (err instanceof ThreadCountError || err instanceof UnknownBackendError) {
    process.stderr.write(`triad: ${oneLine(err.message)}\n`)
    process.exit(ExitCode.usage)
  }
  if (err instanceof BackendUnavailableError) {
    process.stderr.write(`triad: ${err.message}\n`)
    process.exit(ExitCode.failure)
  }
  // Bad input that a command did not wrap (a recipe the schema refuses, a path that is not a run
  // directory): a usage error all the same.
  if (isBadInput(err)) {
    process.stderr.write(`triad: ${oneLine((err as Error).message)}\n`)
    process.exit(ExitCode.usage)
  }
  // Anything else is a bug or an unexpected failure: print it whole (the tensor backend installs
  // its own handler for uncaught errors, which would print its minified source instead).
  process.stderr.write(`triad: unexpected error: ${(err as Error)?.stack ?? String(err)}\n`)
  process.exit(1)
}
