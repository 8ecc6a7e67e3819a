import assert from 'node:assert/strict'
import { execFileSync } from 'node:child_process'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { it } from 'node:test'
import type { RunCodeRequestInput, RunCodeResponse } from '../../protocols/index.ts'

/**
 * The hostile-code and bad-request cases, shared by the backend test files. Each hostile case
 * asserts the exact status, that the host is unharmed (no process of the sandbox users left
 * outside the warm containers' keepers, the server healthy, no file written on the host) and that
 * the next request succeeds.
 */

/** A secret in the server's environment that no program may read. */
export const SECRET = `triad-secret-${process.pid}-f00d`

export interface SuiteTarget {
  /** Base URL of the running sandbox. */
  url: () => string
  /** Host uids the sandbox users map to (processes of these uids must all be gone after a job). */
  uids: () => number[]
  /** Bytes kept of stdout. */
  outputBytes: number
}

/** POSTs JSON and returns the status code and the parsed body. */
export async function post(url: string, body: unknown): Promise<{ code: number; body: RunCodeResponse }> {
  const res = await fetch(`${url}/run_code`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  })
  return { code: res.status, body: (await res.json()) as RunCodeResponse }
}

/** Processes of `uids` on the host, leaving out the containers' idle keepers (`sleep infinity`). */
export function strayProcesses(uids: number[]): string[] {
  const found: string[] = []
  for (const n of readdirSync('/proc')) {
    if (!/^\d+$/.test(n)) continue
    try {
      const status = readFileSync(`/proc/${n}/status`, 'utf8')
      const uid = Number(/^Uid:\s+(\d+)/m.exec(status)?.[1])
      if (!uids.includes(uid)) continue
      const cmd = readFileSync(`/proc/${n}/cmdline`, 'utf8').replaceAll('\0', ' ').trim()
      if (cmd === 'sleep infinity' || cmd === '') continue
      found.push(`${n} (uid ${uid}): ${cmd}`)
    } catch {
      // exited while we looked
    }
  }
  return found
}

async function hostUnharmedAndNextSucceeds(t: SuiteTarget): Promise<void> {
  assert.deepEqual(strayProcesses(t.uids()), [], 'no sandbox process is left on the host')
  const health = await fetch(`${t.url()}/health`)
  assert.equal(health.status, 200)
  execFileSync('/bin/true') // the host can still start processes
  const next = await post(t.url(), { code: 'print(6 * 7)', language: 'python' })
  assert.equal(next.body.status, 'Success', JSON.stringify(next.body))
  assert.equal(next.body.run_result?.stdout, '42\n')
}

async function run(t: SuiteTarget, req: RunCodeRequestInput) {
  const t0 = performance.now()
  const r = await post(t.url(), req)
  assert.equal(r.code, 200, JSON.stringify(r.body))
  return { ...r.body, ms: performance.now() - t0 }
}

/** Registers the hostile-code cases (inside the caller's `describe`). */
export function hostileCases(area: string, t: SuiteTarget): void {
  it(`${area} - an infinite loop hits the time limit: Failed / TimeLimitExceeded`, async () => {
    const r = await run(t, { code: 'while True:\n    pass\n', language: 'python', run_timeout: 1 })
    assert.equal(r.status, 'Failed')
    assert.equal(r.run_result?.status, 'TimeLimitExceeded')
    assert.equal(r.run_result?.return_code, null)
    assert.ok(r.ms < 6000, `answered in ${r.ms} ms`)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - a fork bomb is contained and killed at the time limit: Failed / TimeLimitExceeded`, async () => {
    const code = 'import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n'
    const r = await run(t, { code, language: 'python', run_timeout: 2 })
    assert.equal(r.status, 'Failed')
    assert.equal(r.run_result?.status, 'TimeLimitExceeded')
    assert.ok(r.ms < 10000, `answered in ${r.ms} ms`)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - allocating 10 GB is stopped by the memory limit: Failed / Finished non-zero`, async () => {
    const code = 'x = b"x" * (10 * 1024 ** 3)\nprint(len(x))\n'
    const r = await run(t, { code, language: 'python', run_timeout: 10, memory_limit_MB: 128 })
    assert.equal(r.status, 'Failed', JSON.stringify(r))
    assert.equal(r.run_result?.status, 'Finished')
    assert.notEqual(r.run_result?.return_code, 0)
    assert.equal(r.run_result?.stdout, '')
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - 100 MB of stdout is cut at the output limit quickly: Failed / killed`, async () => {
    const code = 'import sys\nchunk = "x" * (1 << 20)\nfor _ in range(100):\n    sys.stdout.write(chunk)\n'
    const r = await run(t, { code, language: 'python', run_timeout: 20 })
    assert.equal(r.status, 'Failed')
    assert.equal(r.run_result?.status, 'Finished')
    assert.equal(r.run_result?.return_code, -9)
    assert.equal(r.run_result?.stdout?.length, t.outputBytes)
    assert.match(r.message, /output over the limit/)
    assert.ok(r.ms < 5000, `answered in ${r.ms} ms`)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - writing outside the work dir fails and leaves the host untouched: Failed`, async () => {
    const name = `triad-pwned-${process.pid}`
    const targets = [`/etc/${name}`, `/usr/${name}`, `/${name}`, `../${name}`, `/usr/bin/python3`]
    const code = [
      'import sys',
      `targets = ${JSON.stringify(targets)}`,
      'wrote = []',
      'for p in targets:',
      '    try:',
      '        with open(p, "a") as f:',
      '            f.write("pwned")',
      '        wrote.append(p)',
      '    except OSError as e:',
      '        print("blocked", p, type(e).__name__)',
      'sys.exit(0 if wrote else 1)',
    ].join('\n')
    const r = await run(t, { code, language: 'python' })
    assert.equal(r.status, 'Failed', JSON.stringify(r))
    assert.equal(r.run_result?.return_code, 1)
    assert.equal(r.run_result?.stdout?.split('\n').filter((l) => l.startsWith('blocked')).length, 5)
    for (const p of [`/etc/${name}`, `/usr/${name}`, `/${name}`]) assert.equal(existsSync(p), false, p)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - host secrets (server env, /etc/shadow) cannot be read: Failed`, async () => {
    assert.equal(process.env['TRIAD_SANDBOX_TEST_SECRET'], SECRET, 'the server process holds the secret')
    const code = [
      'import os',
      'print(dict(os.environ))',
      'for p in ("/proc/1/environ", "/proc/%d/environ" % os.getppid()):',
      '    try:',
      '        print(open(p, "rb").read())',
      '    except OSError as e:',
      '        print("no", p, type(e).__name__)',
      'print(open("/etc/shadow").read())',
    ].join('\n')
    const r = await run(t, { code, language: 'python' })
    assert.equal(r.status, 'Failed', JSON.stringify(r))
    assert.ok(!r.run_result?.stdout?.includes(SECRET), 'the secret leaked')
    assert.ok(!r.run_result?.stdout?.includes('root:'), '/etc/shadow leaked')
    assert.match(r.run_result?.stderr ?? '', /(FileNotFoundError|PermissionError).*shadow/)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - a network socket cannot reach the host: Failed`, async () => {
    const port = new URL(t.url()).port
    const code = [
      'import socket',
      `s = socket.create_connection(("127.0.0.1", ${port}), timeout=3)`,
      's.sendall(b"GET /health HTTP/1.0\\r\\n\\r\\n")',
      'print(s.recv(100))',
    ].join('\n')
    const r = await run(t, { code, language: 'python' })
    assert.equal(r.status, 'Failed', JSON.stringify(r))
    assert.match(r.run_result?.stderr ?? '', /ConnectionRefusedError|Network is unreachable|OSError/)
    assert.equal(r.run_result?.stdout, '')
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - killing its parent is not permitted: Failed`, async () => {
    const code = 'import os, signal\nos.kill(os.getppid(), signal.SIGKILL)\nprint("killed")\n'
    const r = await run(t, { code, language: 'python' })
    assert.equal(r.status, 'Failed', JSON.stringify(r))
    assert.equal(r.run_result?.status, 'Finished')
    assert.match(r.run_result?.stderr ?? '', /PermissionError/)
    const bash = await run(t, { code: 'kill -9 $PPID && echo killed', language: 'bash' })
    assert.equal(bash.status, 'Failed', JSON.stringify(bash))
    assert.equal(bash.run_result?.stdout, '')
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - sleeping past the timeout is cut at the limit: Failed / TimeLimitExceeded`, async () => {
    const r = await run(t, { code: 'import time\ntime.sleep(30)\n', language: 'python', run_timeout: 1 })
    assert.equal(r.status, 'Failed')
    assert.equal(r.run_result?.status, 'TimeLimitExceeded')
    assert.ok((r.run_result?.execution_time ?? 99) < 2, `execution_time ${r.run_result?.execution_time}`)
    assert.ok(r.ms < 5000, `answered in ${r.ms} ms`)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - output that is not UTF-8 comes back with replacement characters: Success`, async () => {
    const code = 'import sys\nsys.stdout.buffer.write(b"ok \\xff\\xfe\\x80 end\\n")\n'
    const r = await run(t, { code, language: 'python' })
    assert.equal(r.status, 'Success')
    assert.equal(r.run_result?.stdout, 'ok \ufffd\ufffd\ufffd end\n')
    await hostUnharmedAndNextSucceeds(t)
  })
}

/** Registers the bad-request cases. */
export function badRequestCases(area: string, t: SuiteTarget): void {
  it(`${area} - an unsupported language is refused with 422 naming the supported ones`, async () => {
    const r = await post(t.url(), { code: 'DISPLAY "HI"', language: 'cobol' })
    assert.equal(r.code, 422)
    assert.equal(r.body.status, 'SandboxError')
    assert.match(r.body.message, /unsupported language 'cobol'; supported: python, bash, nodejs/)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - malformed JSON is refused with 400`, async () => {
    const r = await post(t.url(), '{"code": "print(1)", "language": ')
    assert.equal(r.code, 400)
    assert.equal(r.body.status, 'SandboxError')
    assert.match(r.body.message, /malformed request/)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - an oversized body is refused with 413`, async () => {
    const r = await post(t.url(), { code: `# ${'x'.repeat(40 * 2 ** 20)}`, language: 'python' })
    assert.equal(r.code, 413)
    assert.equal(r.body.status, 'SandboxError')
    assert.match(r.body.message, /too large/)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - missing fields are refused with 422 naming them`, async () => {
    const r = await post(t.url(), { language: 'python' })
    assert.equal(r.code, 422)
    assert.match(r.body.message, /code/)
    const none = await post(t.url(), {})
    assert.equal(none.code, 422)
    assert.match(none.body.message, /code.*language|language.*code/)
    await hostUnharmedAndNextSucceeds(t)
  })

  it(`${area} - a file path that leaves the work dir is refused with 422`, async () => {
    const r = await post(t.url(), { code: 'print(1)', language: 'python', files: { '../x': 'eA==' } })
    assert.equal(r.code, 422)
    assert.match(r.body.message, /must be relative/)
    await hostUnharmedAndNextSucceeds(t)
  })
}
