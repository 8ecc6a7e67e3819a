import { resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { ChatMessage } from '../../protocols/index.ts'
import type { AgentInstance } from './agent-instances.ts'
import { RewardFunctionError } from './errors.ts'

/** A task's reward function over an episode's chat messages and its instance. */
export type AgentRewardFunction = (
  messages: ChatMessage[],
  instance: AgentInstance,
) => number | Promise<number>

const loaded = new Map<string, Promise<AgentRewardFunction>>()

/**
 * The default export of the module at `path` (relative to the working directory), loaded once.
 * @throws (the promise rejects) the import's error when the module cannot be imported;
 *   RewardFunctionError when its default export is not a function.
 */
export function loadRewardFunction(path: string): Promise<AgentRewardFunction> {
  const file = resolve(path)
  let fn = loaded.get(file)
  if (!fn) {
    fn = import(pathToFileURL(file).href).then((m: { default?: unknown }) => {
      if (typeof m.default !== 'function')
        throw new RewardFunctionError(
          path,
          `${path} has no default export function (messages, instance) => number`,
        )
      return m.default as AgentRewardFunction
    })
    loaded.set(file, fn)
  }
  return fn
}
