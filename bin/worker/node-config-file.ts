import { readFileSync } from 'node:fs'
import type { NodeConfig } from '../../actors/index.ts'
import { CliError, UsageError } from '../errors.ts'

/**
 * The node config of `--config FILE` (written by `triad run` into the run directory as
 * `node-config.json`).
 * @throws CliError when the option is missing or the file is not a node config.
 */
export function readNodeConfig(options: Record<string, unknown>): NodeConfig {
  const file = options.config
  if (typeof file !== 'string')
    throw new UsageError("this role needs --config FILE (a run directory's node-config.json)")
  let config: NodeConfig
  try {
    config = JSON.parse(readFileSync(file, 'utf8')) as NodeConfig
  } catch (err) {
    throw new CliError(`cannot read the node config ${file}: ${(err as Error).message}`, { cause: err })
  }
  if (typeof config?.run !== 'string' || typeof config.pipeline !== 'object')
    throw new CliError(`${file} is not a triad node config (no run or pipeline)`)
  return config
}
