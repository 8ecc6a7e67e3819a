import type { Command } from 'commander'

/** The full name of a command as typed: `triad`, `triad run`, `triad env worker`. */
export function commandPath(command: Command): string {
  const names: string[] = []
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name())
  return names.join(' ')
}

/**
 * Makes every usage error of `program` and its subcommands (an unknown option or command, a
 * missing argument, a bad option value) print commander's one-line message and then one line
 * `` see `triad <cmd> --help` `` instead of the whole help. Call it after every subcommand is
 * registered: commander copies this setting to a subcommand only when it is created.
 */
export function hintHelpAfterErrors(program: Command): void {
  program.showHelpAfterError(`see \`${commandPath(program)} --help\``)
  for (const sub of program.commands) hintHelpAfterErrors(sub)
}
