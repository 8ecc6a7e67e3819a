import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/**
 * An HTTP server that answers chat-completion requests as the test says (garbage, errors, silence,
 * or a plain assistant reply): the bad endpoints `triad collect` and `triad eval --policy` must
 * refuse. Not a model: it stands for the broken or wrong servers a user may point triad at.
 */
export interface FakeEndpoint {
  /** `http://127.0.0.1:<port>/v1`. */
  base: string
  /** Requests answered so far. */
  requests(): number
  close(): Promise<void>
}

/** `answer(n, res)` answers the n-th request (from 1); it may also leave it unanswered. */
export async function fakeEndpoint(
  answer: (n: number, res: ServerResponse, req: IncomingMessage) => void,
): Promise<FakeEndpoint> {
  let n = 0
  const open = new Set<ServerResponse>()
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      open.add(res)
      res.on('close', () => open.delete(res))
      answer(++n, res, req)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    base: `http://127.0.0.1:${port}/v1`,
    requests: () => n,
    close: async () => {
      for (const res of open) res.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}

/** A chat completion whose assistant message is `content` (no tool call). */
export function plainCompletion(content: string): string {
  return JSON.stringify({
    id: 'chatcmpl-1',
    object: 'chat.completion',
    created: 0,
    model: 'fake',
    choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
  })
}

/** A port on 127.0.0.1 with nothing listening (a server's port, closed again). */
export async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}
