export { McpInstanceError, McpServerError } from './errors.ts'
export { McpConnection } from './mcp-connection.ts'
export { McpTaskEnv } from './mcp-task-env.ts'
