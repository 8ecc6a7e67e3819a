import { AgentFailure } from '../gateway/index.ts'

/** An MCP server that could not start, exited, hung or wrote something that is not MCP. */
export class McpServerError extends Error {
  override name = 'McpServerError'
  /** The cause an episode that meets it is counted under (`rollout/failed/mcp_failed`). */
  readonly failure = AgentFailure.McpFailed
  constructor(
    /** `command args` of the server. */
    readonly server: string,
    what: string,
    /** The last of what it wrote on stderr. */
    readonly stderrTail: string,
  ) {
    super(`MCP server ${server} ${what}${stderrTail ? `; its stderr ends: ${stderrTail.slice(-600)}` : ''}`)
  }
}

/** An instance of an MCP task that cannot start an episode: it has neither `messages` nor `question`. */
export class McpInstanceError extends Error {
  override name = 'McpInstanceError'
  constructor(
    /** The instance's index among the task's instances. */
    readonly index: number,
    message: string,
  ) {
    super(message)
  }
}
