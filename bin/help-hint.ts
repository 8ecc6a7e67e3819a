import { type Command, CommanderError } from 'commander'
import { USAGE_EXIT_CODE } from './errors.ts'

/** The full name of a command as typed: `triad`, `triad run`, `triad env worker`. */
export function commandPath(command: Command): string {
  const names: string[] = []
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/**
 * Makes every usage error of `program` and its subcommands (an unknown option or command, a
 * missing argument, a bad option value) print commander's one-line message and then one line
 * `` see `triad <cmd> --help` `` instead of the whole help, and end with exit status 2
 * (`USAGE_EXIT_CODE`, the shell convention for misuse); `--help` and `--version` still exit 0.
 * Commander's exits become a thrown `CommanderError` that the caller turns into the exit status.
 * Call it after every subcommand is registered: commander copies these settings to a subcommand
 * only when it is created.
 */
export function hintHelpAfterErrors(program: Command): void {
  program.showHelpAfterError(`see \`${commandPath(program)} --help\``)
  program.exitOverride((err) => {
    throw err.exitCode === 0 ? err : new CommanderError(USAGE_EXIT_CODE, err.code, err.message)
  })
  for (const sub of program.commands) hintHelpAfterErrors(sub)
}
