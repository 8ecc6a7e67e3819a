import { readFileSync } from 'node:fs'
import { Command, CommanderError } from 'commander'
import { registerBench } from './commands/bench.ts'
import { registerSandbox } from './commands/sandbox.ts'
import { CliError, NotAvailableError } from './errors.ts'

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  version: string
}

const program = new Command()
program
  .name('triad')
  .description('agentic reinforcement learning on supervised actors over NATS')
  .version(pkg.version)
  .showHelpAfterError()

program
  .command('run')
  .description('run a recipe end to end')
  .argument('<recipe>', 'path to a recipe file (recipes/quickstart.ts)')
  .action(() => {
    throw new NotAvailableError('triad run')
  })

program
  .command('worker')
  .description('start one role of a run against a NATS server')
  .requiredOption('--role <role>', 'learner | rollout | env | policy | reward | sandbox')
  .option('--nats <url>', 'NATS server URL', 'nats://127.0.0.1:4222')
  .action(() => {
    throw new NotAvailableError('triad worker')
  })

program
  .command('status')
  .description('list the live triad services and the NATS server state')
  .option('--nats <url>', 'NATS server URL', 'nats://127.0.0.1:4222')
  .option('--monitor <url>', "the server's monitoring URL (http://127.0.0.1:8222)")
  .action(() => {
    throw new NotAvailableError('triad status')
  })

registerBench(program)
registerSandbox(program)

try {
  await program.parseAsync(process.argv)
} catch (err) {
  if (err instanceof CliError) {
    process.stderr.write(`triad: ${err.message}\n`)
    process.exit(err.exitCode)
  }
  if (err instanceof CommanderError) process.exit(err.exitCode)
  throw err
}
