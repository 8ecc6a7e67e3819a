import type { Readable } from 'node:stream'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import type { ToolSchema } from '../../protocols/index.ts'
import type { McpServerSpec } from '../rollout/index.ts'
import { McpServerError } from './errors.ts'

/** Most bytes of a server's stderr kept for its failure's message. */
const TAIL_BYTES = 2_048

/**
 * One MCP server over stdio (`@modelcontextprotocol/sdk`'s client): started, its tools listed as
 * OpenAI tool schemas, its tools called. A crash, a hang past `timeoutS` or output that is not
 * JSON-RPC fails the call in flight and every later one with a McpServerError carrying the
 * server's stderr tail; the connection is then dead (`failed`).
 */
export class McpConnection {
  /** The server's tools, as the policy sees them. */
  tools: ToolSchema[] = []
  /** Set once the server failed (crash, garbage, a hang); every call fails with it. */
  failed: McpServerError | undefined
  private readonly client = new Client({ name: 'triad', version: '1.0.0' })
  private readonly transport: StdioClientTransport
  private tail = ''
  private readonly onFail: Promise<never>
  private fail!: (e: McpServerError) => void
  private closing = false

  private constructor(readonly spec: McpServerSpec) {
    this.transport = new StdioClientTransport({
      command: spec.command,
      args: spec.args,
      env: { ...getDefaultEnvironment(), ...spec.env },
      stderr: 'pipe',
    })
    const stderr = this.transport.stderr as Readable | null
    stderr?.setEncoding('utf8')
    stderr?.on('data', (d: string) => {
      this.tail = (this.tail + d).slice(-TAIL_BYTES)
    })
    this.onFail = new Promise<never>((_, reject) => {
      this.fail = (e) => {
        if (this.failed) return
        this.failed = e
        reject(e)
      }
    })
    this.onFail.catch(() => undefined)
    this.client.onerror = (err) => this.fail(this.error(`wrote something that is not MCP (${err.message})`))
    this.client.onclose = () => {
      if (!this.closing) this.fail(this.error('exited'))
    }
  }

  /** `<command args>`: what the errors name. */
  get name(): string {
    return [this.spec.command, ...this.spec.args].join(' ')
  }

  /**
   * Starts the server and lists its tools, within `spec.timeoutS`.
   * @throws McpServerError when it cannot start, exits, hangs or answers with something else.
   */
  static async start(spec: McpServerSpec): Promise<McpConnection> {
    const c = new McpConnection(spec)
    try {
      await c.bounded('start', async () => {
        await c.client.connect(c.transport)
        const listed = await c.client.listTools()
        c.tools = listed.tools.map((t) => ({
          type: 'function' as const,
          function: {
            name: t.name,
            description: t.description ?? '',
            parameters: t.inputSchema as Record<string, unknown>,
          },
        }))
      })
    } catch (err) {
      await c.close()
      throw err instanceof McpServerError ? err : c.error(`did not start: ${(err as Error).message}`)
    }
    return c
  }

  /**
   * Calls tool `name` with `args`: its text content, joined (an `isError` result prefixed `error: `).
   * @throws McpServerError when the server has failed or fails now (crash, hang, garbage).
   */
  async call(name: string, args: Record<string, unknown>): Promise<string> {
    const result = await this.bounded(`call ${name}`, () => this.client.callTool({ name, arguments: args }))
    const content = (result.content ?? []) as { type: string; text?: string }[]
    const text = content.map((p) => (p.type === 'text' ? (p.text ?? '') : `[${p.type}]`)).join('\n')
    return result.isError ? `error: ${text}` : text
  }

  /** Stops the server (no error when it is already gone). */
  async close(): Promise<void> {
    this.closing = true
    await this.client.close().catch(() => undefined)
  }

  /** `fn`, failed by the server's failure or by `timeoutS`. */
  private async bounded<T>(what: string, fn: () => Promise<T>): Promise<T> {
    if (this.failed) throw this.failed
    let timer: NodeJS.Timeout | undefined
    const hang = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        const e = this.error(`did not answer ${what} within ${this.spec.timeoutS} s`)
        this.fail(e)
        reject(e)
      }, this.spec.timeoutS * 1000)
    })
    try {
      return await Promise.race([fn(), this.onFail, hang])
    } catch (err) {
      if (err instanceof McpServerError) throw err
      // The request failed because the connection did: say what the server did.
      throw this.failed ?? this.error(`failed ${what}: ${(err as Error).message}`)
    } finally {
      clearTimeout(timer)
    }
  }

  private error(what: string): McpServerError {
    return new McpServerError(this.name, what, this.tail.trim())
  }
}
