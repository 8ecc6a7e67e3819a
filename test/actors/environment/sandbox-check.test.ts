import assert from 'node:assert/strict'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { after, describe, it } from 'node:test'
import { checkSandboxesOf, checkTaskSandboxes, SandboxCheckError, tasks } from '../../../actors/index.ts'
import { createCodeTask } from '../../../actors/testing.ts'

const HEALTH = {
  status: 'ok',
  backend: 'local',
  isolation: 'rlimits',
  languages: ['python'],
  running: 0,
  queued: 0,
}

/** A run_code response printing `stdout`. */
const answer = (stdout: string, status = 'Success') => ({
  status,
  message: '',
  compile_result: null,
  run_result: { status: 'Finished', execution_time: 0.01, return_code: 0, stdout, stderr: '' },
  executor_pod_name: null,
  files: {},
})

/**
 * A real HTTP server standing in for a sandbox that misbehaves (what a broken SandboxFusion or a
 * wrong URL answers): `routes` maps a path to the status and body it answers.
 */
async function fakeSandbox(
  routes: Record<string, { status: number; body: string }>,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    req.resume()
    req.on('end', () => {
      const r = routes[req.url ?? ''] ?? { status: 404, body: 'not found' }
      res.writeHead(r.status, { 'content-type': 'application/json' })
      res.end(r.body)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server }
}

/** Runs `fn` with TRIAD_SANDBOX_URL set to `url` (restored after). */
async function withSandboxUrl<T>(url: string | undefined, fn: () => Promise<T>): Promise<T> {
  const old = process.env.TRIAD_SANDBOX_URL
  if (url === undefined) delete process.env.TRIAD_SANDBOX_URL
  else process.env.TRIAD_SANDBOX_URL = url
  try {
    return await fn()
  } finally {
    if (old === undefined) delete process.env.TRIAD_SANDBOX_URL
    else process.env.TRIAD_SANDBOX_URL = old
  }
}

/** Asserts that checking the built-in `code` task fails with one line naming `url` and matching `said`. */
async function failsNaming(url: string, said: RegExp): Promise<void> {
  await assert.rejects(
    withSandboxUrl(url, () => checkSandboxesOf(['calc', 'code'])),
    (err: unknown) => {
      assert.ok(err instanceof SandboxCheckError, String(err))
      assert.equal(err.task, 'code')
      assert.equal(err.where, url)
      assert.ok(
        err.message.startsWith(
          `task 'code' needs a code sandbox and ${url} failed the start check (print(6 * 7) through /run_code): `,
        ),
        err.message,
      )
      assert.ok(!err.message.includes('\n'), 'one line')
      assert.match(err.detail, said)
      return true
    },
  )
}

describe('actors/environment/sandbox-check - the code sandbox is checked with a real program before a run', () => {
  const servers: Server[] = []
  const fake = async (routes: Record<string, { status: number; body: string }>) => {
    const f = await fakeSandbox(routes)
    servers.push(f.server)
    return f.url
  }
  after(() => {
    for (const s of servers) s.close()
  })

  it('only the code task declares a sandbox among the built-in tasks', () => {
    assert.deepEqual(
      Object.values(tasks)
        .filter((t) => t.sandbox)
        .map((t) => t.name),
      ['code'],
    )
  })

  it('TRIAD_SANDBOX_URL=http://127.0.0.1:1 (a port fetch refuses to use): fails naming the URL and why', async () => {
    await failsNaming(
      'http://127.0.0.1:1',
      /^code sandbox at http:\/\/127\.0\.0\.1:1 is unreachable: fetch failed.*bad port/,
    )
  })

  it('TRIAD_SANDBOX_URL where nothing listens: fails naming the URL and the refused connection', async () => {
    const closed = createServer()
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
    const port = (closed.address() as AddressInfo).port
    await new Promise<void>((resolve) => closed.close(() => resolve()))
    await failsNaming(`http://127.0.0.1:${port}`, /is unreachable: fetch failed.*ECONNREFUSED/)
  })

  it('a sandbox answering HTTP 500 to everything: fails naming the URL and the 500', async () => {
    const url = await fake({ '/health': { status: 500, body: 'boom' } })
    await failsNaming(url, /GET \/health answered HTTP 500/)
  })

  it('a server answering garbage to /health: fails naming what it answered', async () => {
    const url = await fake({ '/health': { status: 200, body: 'garbage' } })
    await failsNaming(url, /is unreachable: .*not valid JSON/)
  })

  it('a sandbox whose /run_code answers HTTP 500: fails with the status and body', async () => {
    const url = await fake({
      '/health': { status: 200, body: JSON.stringify(HEALTH) },
      '/run_code': { status: 500, body: 'internal\nboom' },
    })
    await failsNaming(url, new RegExp(`^code sandbox at ${url} answered HTTP 500: internal boom$`))
  })

  it('a sandbox whose /run_code answers garbage: fails quoting it', async () => {
    const url = await fake({
      '/health': { status: 200, body: JSON.stringify(HEALTH) },
      '/run_code': { status: 200, body: '{"nope": 1}' },
    })
    await failsNaming(url, /answered HTTP 200: not a run_code response: \{"nope": 1\}$/)
  })

  it('a sandbox that runs the program wrong: fails with the status and stdout it answered', async () => {
    const url = await fake({
      '/health': { status: 200, body: JSON.stringify(HEALTH) },
      '/run_code': { status: 200, body: JSON.stringify(answer('41\n')) },
    })
    await failsNaming(url, /^it answered status Success with stdout "41\\n"$/)
    const failed = await fake({
      '/health': { status: 200, body: JSON.stringify(HEALTH) },
      '/run_code': {
        status: 200,
        body: JSON.stringify({
          ...answer('', 'Failed'),
          run_result: { ...answer('').run_result, stderr: 'NameError: x' },
        }),
      },
    })
    await failsNaming(failed, /^it answered status Failed with stdout "": NameError: x$/)
  })

  it('a sandbox that answers right passes, once for tasks that share it', async () => {
    let runs = 0
    const server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        if (req.url === '/run_code') runs++
        res.writeHead(200, { 'content-type': 'application/json' })
        res.end(JSON.stringify(req.url === '/health' ? HEALTH : answer('42\n')))
      })
    })
    servers.push(server)
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    await withSandboxUrl(url, () => checkTaskSandboxes([tasks.code!, tasks.calc!, createCodeTask()]))
    assert.equal(runs, 1)
  })

  it('without TRIAD_SANDBOX_URL the local backend runs the program for real', async () => {
    await withSandboxUrl(undefined, () => checkSandboxesOf(['code']))
  })

  it('tasks without a sandbox, and names the registry lacks, are not checked', async () => {
    await withSandboxUrl('http://127.0.0.1:1', () => checkSandboxesOf(['calc', 'maze', 'sql', 'mine']))
  })
})
