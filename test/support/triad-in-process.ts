import { Command, CommanderError } from 'commander'
import { CliError } from '../../bin/errors.ts'
import { hintHelpAfterErrors } from '../../bin/help-hint.ts'

/**
 * Runs one `triad` command in this process, as bin/triad.ts runs it (commander's usage errors
 * exit 2, a CliError prints `triad: <message>` and exits with its status), without the seconds a
 * new Node process with tsx takes: for the bad-input cases of a command, whose every case would
 * otherwise start one. `register` adds the command (`registerCollect`).
 * @returns the exit status and what went to stderr.
 */
export async function runTriadInProcess(
  register: (program: Command) => void,
  args: string[],
): Promise<{ code: number; stderr: string }> {
  let stderr = ''
  const program = new Command().name('triad')
  program.configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} })
  register(program)
  for (const sub of program.commands)
    sub.configureOutput({ writeErr: (s) => (stderr += s), writeOut: () => {} })
  hintHelpAfterErrors(program)
  try {
    await program.parseAsync(args, { from: 'user' })
    return { code: 0, stderr }
  } catch (err) {
    if (err instanceof CliError) return { code: err.exitCode, stderr: `${stderr}triad: ${err.message}\n` }
    if (err instanceof CommanderError) return { code: err.exitCode, stderr }
    throw err
  }
}
