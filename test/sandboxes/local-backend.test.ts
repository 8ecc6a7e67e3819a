import assert from 'node:assert/strict'
import { after, before, describe, it } from 'node:test'
import type { FastifyInstance } from 'fastify'
import { buildSandboxServer, DEFAULT_LIMITS, LocalBackend, runCode } from '../../sandboxes/index.ts'
import { buildSeccompFilter } from '../../sandboxes/seccomp.ts'
import {
  badRequestCases,
  descendsFrom,
  forkServerCases,
  forkServerPids,
  hostileCases,
  perUserLimitCases,
  post,
  SECRET,
  type SuiteTarget,
  strayProcesses,
} from './hostile-suite.ts'

process.env['TRIAD_SANDBOX_TEST_SECRET'] = SECRET
const limits = { ...DEFAULT_LIMITS, concurrency: 2, memoryMB: 256, pids: 64, outputBytes: 1 << 20 }
const FIRST_UID = 61500
let app: FastifyInstance
let backend: LocalBackend
let url = ''
const warnings: string[] = []
const target: SuiteTarget = {
  url: () => url,
  uids: () => [FIRST_UID, FIRST_UID + 1],
  outputBytes: limits.outputBytes,
  slots: limits.concurrency,
  recycled: () => backend.stats().recycled,
  forkServers: async () => forkServerPids((pid) => descendsFrom(pid, process.pid)),
}

before(async () => {
  backend = new LocalBackend({ limits, firstUid: FIRST_UID, warn: (m) => warnings.push(m) })
  await backend.start()
  app = buildSandboxServer({ backend })
  url = await app.listen({ port: 0, host: '127.0.0.1' })
})

after(async () => {
  await app.close()
  await backend.close()
})

describe('sandboxes/local-backend', () => {
  it('local backend - uses bubblewrap here and warns about nothing', () => {
    assert.equal(backend.isolation, 'bwrap')
    assert.deepEqual(warnings, [])
  })

  it('local backend - python, bash, nodejs and cpp run; files go in and come back', async () => {
    const py = await post(url, {
      code: 'import sys\ndata = open("in/data.txt").read()\nopen("out.txt", "w").write(data.upper() + sys.stdin.read())\nprint("ok")',
      language: 'python',
      stdin: '!',
      files: { 'in/data.txt': Buffer.from('hello').toString('base64') },
      fetch_files: ['out.txt', 'missing.txt'],
    })
    assert.equal(py.code, 200)
    assert.equal(py.body.status, 'Success', JSON.stringify(py.body))
    assert.equal(py.body.run_result?.stdout, 'ok\n')
    assert.deepEqual(py.body.files, { 'out.txt': Buffer.from('HELLO!').toString('base64') })
    assert.equal(py.body.compile_result, null)
    const sh = await post(url, { code: 'echo $((6*7)); exit 3', language: 'bash' })
    assert.equal(sh.body.status, 'Failed')
    assert.equal(sh.body.run_result?.return_code, 3)
    assert.equal(sh.body.run_result?.stdout, '42\n')
    const js = await post(url, {
      code: 'console.log([1,2,3].map((x) => x * 2).join(","))',
      language: 'nodejs',
    })
    assert.equal(js.body.run_result?.stdout, '2,4,6\n')
    const cpp = await post(url, { code: '#include <cstdio>\nint main(){std::puts("c++");}', language: 'cpp' })
    assert.equal(cpp.body.status, 'Success', JSON.stringify(cpp.body))
    assert.equal(cpp.body.compile_result?.status, 'Finished')
    assert.equal(cpp.body.run_result?.stdout, 'c++\n')
    const bad = await post(url, { code: 'int main(){ return x; }', language: 'cpp' })
    assert.equal(bad.body.status, 'Failed')
    assert.notEqual(bad.body.compile_result?.return_code, 0)
    assert.equal(bad.body.run_result, null)
  })

  it('local backend - the code runs as an unprivileged per-slot user with no network interface but lo', async () => {
    const r = await post(url, {
      code: 'id -u; ls /sys/class/net 2>/dev/null || cat /proc/net/dev | tail -n +3 | cut -d: -f1',
      language: 'bash',
    })
    const [uid, ...nets] = (r.body.run_result?.stdout ?? '').trim().split(/\s+/)
    assert.ok([FIRST_UID, FIRST_UID + 1].includes(Number(uid)), `uid ${uid}`)
    assert.deepEqual(nets, ['lo'])
  })

  it('local backend - without bubblewrap it warns loudly, still limits time and leaves no process', async () => {
    const said: string[] = []
    const weak = new LocalBackend({
      limits: { ...limits, concurrency: 1 },
      bwrap: false,
      firstUid: 61800,
      warn: (m) => said.push(m),
    })
    await weak.start()
    try {
      assert.equal(weak.isolation, 'rlimits')
      assert.match(
        said.join('\n'),
        /WARNING: local sandbox isolation is WEAKER than docker[\s\S]*bubblewrap is not installed/,
      )
      const ok = await runCode({ code: 'import os\nprint(os.getuid())', language: 'python' }, weak)
      assert.equal(ok.body.status === 'Success' && ok.body.run_result?.stdout, '61800\n')
      const slow = await runCode(
        { code: 'import os, time\nos.fork()\ntime.sleep(30)', language: 'python', run_timeout: 1 },
        weak,
      )
      assert.equal(slow.body.status, 'Failed')
      assert.equal(slow.statusCode === 200 && slow.body.run_result?.status, 'TimeLimitExceeded')
      assert.deepEqual(strayProcesses([61800]), [])
    } finally {
      await weak.close()
    }
  })

  it('local backend - the seccomp filter compiles; a python without python3-seccomp says how to get it', () => {
    const ok = buildSeccompFilter()
    assert.ok('bpf' in ok, JSON.stringify(ok))
    assert.equal(ok.bpf.length % 8, 0)
    const missing = buildSeccompFilter('/bin/false')
    assert.ok('error' in missing)
    const none = buildSeccompFilter('/no/such/python')
    assert.deepEqual(none, { error: 'cannot run /no/such/python: spawnSync /no/such/python ENOENT' })
  })

  it('local backend - python runs under the fork server, or spawned with forkServer false', async () => {
    const code =
      'import os\na = open("/proc/%d/cmdline" % os.getppid(), "rb").read().split(b"\\0")\nprint(a[1:a.index(b"-c")], a[a.index(b"-c") + 1][:24])'
    const forked = await post(url, { code, language: 'python' })
    assert.equal(
      forked.body.run_result?.stdout,
      "[b'-s', b'-E'] b'# The python fork server'\n",
      JSON.stringify(forked.body),
    )
    const spawning = new LocalBackend({
      limits: { ...limits, concurrency: 1 },
      firstUid: 61810,
      forkServer: false,
    })
    await spawning.start()
    try {
      const spawned = await runCode({ code, language: 'python' }, spawning)
      assert.equal(
        'run_result' in spawned.body && spawned.body.run_result?.stdout,
        "[b'-I', b'-S'] b'# The in-sandbox job run'\n",
        JSON.stringify(spawned.body),
      )
    } finally {
      await spawning.close()
    }
  })

  hostileCases('local backend', target)
  forkServerCases('local backend', target)
  badRequestCases('local backend', target)
  perUserLimitCases('local backend', target)
})
