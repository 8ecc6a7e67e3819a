import { readFileSync } from 'node:fs'
import { type NodeConfig, parseNodeConfig } from '../../actors/index.ts'
import { CliError, UsageError } from '../errors.ts'

/**
 * The node config of `--config FILE` (written by `triad run` into the run directory as
 * `node-config.json`).
 * @throws UsageError when the option is missing; CliError when the file cannot be read or is not a
 *   node config (`parseNodeConfig`: the message names the file and each bad or missing field).
 */
export function readNodeConfig(options: Record<string, unknown>): NodeConfig {
  const file = options.config
  if (typeof file !== 'string')
    throw new UsageError("this role needs --config FILE (a run directory's node-config.json)")
  let value: unknown
  try {
    value = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new CliError(`cannot read the node config ${file}: ${(err as Error).message}`, { cause: err })
  }
  try {
    return parseNodeConfig(value, file)
  } catch (err) {
    throw new CliError((err as Error).message, { cause: err })
  }
}
