import assert from 'node:assert/strict'
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, describe, it } from 'node:test'
import { fileURLToPath } from 'node:url'
import { writeTinyCheckpoint } from '../support/tiny-checkpoint.ts'
import { startTriad } from '../support/triad-process.ts'

const tiny = fileURLToPath(new URL('../../recipes/tiny.ts', import.meta.url))
const defineRecipePath = fileURLToPath(new URL('../../recipes/define-recipe.ts', import.meta.url))

/** recipes/tiny.ts with the tasks code and calc, written into `dir`. */
function tinyWithCode(dir: string): string {
  const file = join(dir, 'tiny-code.ts')
  const source = readFileSync(tiny, 'utf8')
    .replace("from './define-recipe.ts'", `from ${JSON.stringify(defineRecipePath)}`)
    .replace(/tasks: \[[^\]]*\]/, "tasks: [{ name: 'code' }, { name: 'calc' }]")
  assert.ok(source.includes("{ name: 'code' }"))
  writeFileSync(file, source)
  return file
}

/** Runs `triad ...args` with TRIAD_SANDBOX_URL=`url` to its end. */
async function triadWithSandbox(url: string, args: string[]) {
  const p = startTriad(args, { TRIAD_SANDBOX_URL: url })
  const { code } = await p.exited
  return { code, stderr: p.stderr(), stdout: p.stdout }
}

/** The one line a failed start check prints, for `url`. */
const checkLine = (url: string) =>
  `triad: task 'code' needs a code sandbox and ${url} failed the start check (print(6 * 7) through /run_code): `

describe('bin - triad run, env try and eval check the code sandbox before they start', () => {
  let server: Server
  let url500: string
  before(async () => {
    // A real HTTP server that answers 500 to everything: a sandbox that is broken.
    server = createServer((req, res) => {
      req.resume()
      req.on('end', () => {
        res.writeHead(500)
        res.end('boom')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    url500 = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  })
  after(() => {
    server.close()
  })

  it('triad run with the code task and TRIAD_SANDBOX_URL=http://127.0.0.1:1 exits 1 with one line naming the URL; nothing is written', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-sbx-'))
    const runsDir = join(dir, 'runs')
    const r = await triadWithSandbox('http://127.0.0.1:1', ['run', tinyWithCode(dir), '--runs-dir', runsDir])
    assert.equal(r.code, 1, r.stderr)
    const lines = r.stderr.split('\n').filter(Boolean)
    assert.equal(lines.length, 1, r.stderr)
    assert.ok(lines[0]!.startsWith(checkLine('http://127.0.0.1:1')), lines[0])
    assert.match(lines[0]!, /is unreachable: fetch failed \(bad port\)$/)
    assert.deepEqual(r.stdout, [])
    // No run directory, not even the runs folder.
    assert.deepEqual(readdirSync(dir), ['tiny-code.ts'])
  })

  it('triad env try code with a sandbox answering 500 exits 1 with one line naming the URL and the 500', async () => {
    const r = await triadWithSandbox(url500, ['env', 'try', 'code'])
    assert.equal(r.code, 1, r.stderr)
    assert.equal(
      r.stderr,
      `${checkLine(url500)}code sandbox at ${url500} is unreachable: GET /health answered HTTP 500\n`,
    )
    assert.deepEqual(r.stdout, [])
  })

  it('triad eval --tasks code with a sandbox answering 500 exits 1 with one line before evaluating', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'triad-sbx-eval-'))
    await writeTinyCheckpoint(dir)
    const r = await triadWithSandbox(url500, ['eval', dir, '--tasks', 'code', '--k', '1', '--instances', '1'])
    assert.equal(r.code, 1, r.stderr)
    assert.equal(
      r.stderr,
      `${checkLine(url500)}code sandbox at ${url500} is unreachable: GET /health answered HTTP 500\n`,
    )
  })
})
