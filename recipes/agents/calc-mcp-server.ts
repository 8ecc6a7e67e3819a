/**
 * The calc tools as an MCP server over stdio (Model Context Protocol, `@modelcontextprotocol/sdk`):
 * `calculator(expression)` evaluates `+ - * /` and parentheses. An MCP task names it as
 * `mcp: [{ command: 'node', args: ['--import', 'tsx', 'recipes/agents/calc-mcp-server.ts'] }]`;
 * any MCP client can use it the same way.
 *
 * For tests of faults, `CALC_MCP_FAULT` makes it misbehave after its tools are listed: `crash`
 * (exit 3 on a call, after a line on stderr), `hang` (never answer a call), `garbage` (write a
 * line that is not JSON-RPC, and no answer).
 */
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js'
import { z } from 'zod'

/** `+ - * /` and parentheses over decimal numbers, by recursive descent (no `eval`). */
export function calculate(expression: string): number {
  let i = 0
  const s = expression.replace(/\s+/g, '')
  const atom = (): number => {
    if (s[i] === '(') {
      i++
      const v = sum()
      // bare: a standalone program that imports nothing of triad
      if (s[i++] !== ')') throw new Error('missing )')
      return v
    }
    if (s[i] === '-') {
      i++
      return -atom()
    }
    const m = /^\d+(\.\d+)?/.exec(s.slice(i))
    // bare: a standalone program that imports nothing of triad
    if (!m) throw new Error(`expected a number at ${i}`)
    i += m[0].length
    return Number(m[0])
  }
  const product = (): number => {
    let v = atom()
    while (s[i] === '*' || s[i] === '/') v = s[i++] === '*' ? v * atom() : v / atom()
    return v
  }
  const sum = (): number => {
    let v = product()
    while (s[i] === '+' || s[i] === '-') v = s[i++] === '+' ? v + product() : v - product()
    return v
  }
  const v = sum()
  // bare: a standalone program that imports nothing of triad
  if (i !== s.length) throw new Error(`unexpected '${s[i]}' at ${i}`)
  return v
}

const fault = process.env.CALC_MCP_FAULT
const server = new McpServer({ name: 'triad-calc', version: '1.0.0' })
server.registerTool(
  'calculator',
  {
    description: 'Evaluate an arithmetic expression with + - * / and parentheses.',
    inputSchema: { expression: z.string() },
  },
  async ({ expression }) => {
    if (fault === 'crash') {
      process.stderr.write('calc-mcp-server: crashing as CALC_MCP_FAULT=crash asks\n')
      process.exit(3)
    }
    if (fault === 'hang') await new Promise(() => {})
    if (fault === 'garbage') {
      process.stdout.write('this is not JSON-RPC\n')
      await new Promise(() => {})
    }
    try {
      return { content: [{ type: 'text', text: String(calculate(expression)) }] }
    } catch (err) {
      return { content: [{ type: 'text', text: (err as Error).message }], isError: true }
    }
  },
)
await server.connect(new StdioServerTransport())
