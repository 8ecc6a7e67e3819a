import assert from 'node:assert/strict'
import { readFileSync } from 'node:fs'
import { hostname } from 'node:os'
import { after, before, describe, it } from 'node:test'
import Docker from 'dockerode'
import type { FastifyInstance } from 'fastify'
import {
  buildSandboxImage,
  buildSandboxServer,
  DEFAULT_LIMITS,
  DockerBackend,
  DockerMode,
  SandboxImageError,
} from '../../sandboxes/index.ts'
import { SANDBOX_UID, SANDBOX_UID_COUNT } from '../../sandboxes/testing.ts'
import {
  badRequestCases,
  forkServerCases,
  forkServerPids,
  hostileCases,
  perUserLimitCases,
  post,
  SECRET,
  type SuiteTarget,
} from './hostile-suite.ts'

process.env['TRIAD_SANDBOX_TEST_SECRET'] = SECRET
const docker = new Docker()
const noDocker = await docker.ping().then(
  () => false,
  (e: Error) =>
    `no Docker daemon answers on /var/run/docker.sock (${e.message}); start it with .ci/services.sh`,
)
/** The image these tests build (TRIAD_SANDBOX_TEST_IMAGE, default triad-sandbox:test). */
const IMAGE = process.env['TRIAD_SANDBOX_TEST_IMAGE'] ?? 'triad-sandbox:test'
const limits = {
  ...DEFAULT_LIMITS,
  concurrency: 2,
  memoryMB: 256,
  pids: 64,
  outputBytes: 1 << 20,
  recycleAfter: 50,
}
let built: Promise<unknown> | undefined

for (const mode of [DockerMode.Attach, DockerMode.Exec]) suite(mode)

function suite(mode: DockerMode): void {
  let app: FastifyInstance
  let backend: DockerBackend
  let url = ''
  const target: SuiteTarget = {
    url: () => url,
    uids: () => Array.from({ length: SANDBOX_UID_COUNT }, (_, i) => SANDBOX_UID + i),
    outputBytes: limits.outputBytes,
    slots: limits.concurrency,
    foreignContainers: async () =>
      (await docker.listContainers({ filters: { label: ['triad.sandbox.owner'] } }))
        .filter((c) => c.Labels['triad.sandbox.owner'] !== `${hostname()}:${process.pid}`)
        .map((c) => c.Id),
    recycled: () => backend.stats().recycled,
    forkServers: async () => {
      const ids = (
        await docker.listContainers({
          filters: { label: [`triad.sandbox.owner=${hostname()}:${process.pid}`] },
        })
      ).map((c) => c.Id)
      return forkServerPids((pid) => {
        const cgroup = readFileSync(`/proc/${pid}/cgroup`, 'utf8')
        return ids.some((id) => cgroup.includes(id))
      })
    },
  }
  const area = `docker backend (${mode})`

  describe(`sandboxes/docker-backend ${mode} mode`, { skip: noDocker }, () => {
    before(async () => {
      built ??= buildSandboxImage({ image: IMAGE, docker })
      await built
      backend = new DockerBackend({ limits, image: IMAGE, docker, mode })
      await backend.start()
      app = buildSandboxServer({ backend })
      url = await app.listen({ port: 0, host: '127.0.0.1' })
    })

    after(async () => {
      await app?.close()
      await backend?.close()
    })

    it(`${area} - a missing image is a SandboxImageError that says how to build it`, async () => {
      const b = new DockerBackend({ limits, image: 'triad-sandbox:does-not-exist', docker })
      await assert.rejects(
        b.start(),
        (e: unknown) => e instanceof SandboxImageError && /triad sandbox image build/.test(e.message),
      )
    })

    it(`${area} - containers have no network, a read-only root and the limits asked for`, async () => {
      const list = await docker.listContainers({ filters: { label: ['triad.sandbox.owner'] } })
      const mine = list.filter((c) => c.Image === IMAGE)
      assert.ok(mine.length >= 1)
      const info = await docker.getContainer(mine[0]!.Id).inspect()
      assert.equal(info.HostConfig.NetworkMode, 'none')
      assert.equal(info.HostConfig.ReadonlyRootfs, true)
      assert.equal(info.HostConfig.PidsLimit, 64)
      assert.deepEqual(info.HostConfig.CapDrop, ['ALL'])
      assert.ok(info.HostConfig.SecurityOpt?.includes('no-new-privileges'))
    })

    it(`${area} - python, bash, nodejs and cpp run as the container's own uid; files go in and come back`, async () => {
      const py = await post(url, {
        code: 'import os, sys\nopen("out.txt", "w").write(open("in/a.txt").read() + sys.stdin.read())\nprint(os.getuid())',
        language: 'python',
        stdin: '!',
        files: { 'in/a.txt': Buffer.from('hi').toString('base64') },
        fetch_files: ['out.txt'],
      })
      assert.equal(py.body.status, 'Success', JSON.stringify(py.body))
      const mine = await docker.listContainers({
        filters: { label: [`triad.sandbox.owner=${hostname()}:${process.pid}`] },
      })
      const uids = mine.map((c) => Number(c.Labels['triad.sandbox.uid']))
      assert.equal(new Set(uids).size, uids.length, `one uid per container: ${uids}`)
      assert.ok(
        uids.every((u) => u >= SANDBOX_UID && u < SANDBOX_UID + SANDBOX_UID_COUNT),
        `${uids}`,
      )
      assert.ok(uids.includes(Number(py.body.run_result?.stdout)), `${py.body.run_result?.stdout} in ${uids}`)
      assert.deepEqual(py.body.files, { 'out.txt': Buffer.from('hi!').toString('base64') })
      const sh = await post(url, { code: 'ls /work; ls /sys/class/net', language: 'bash' })
      assert.equal(sh.body.run_result?.stdout, 'main.sh\nlo\n', 'a fresh work dir, and no network but lo')
      const js = await post(url, { code: 'console.log(6 * 7)', language: 'nodejs' })
      assert.equal(js.body.run_result?.stdout, '42\n')
      const cpp = await post(url, {
        code: '#include <cstdio>\nint main(){std::puts("c++");}',
        language: 'cpp',
      })
      assert.equal(cpp.body.status, 'Success', JSON.stringify(cpp.body))
      assert.equal(cpp.body.run_result?.stdout, 'c++\n')
    })

    it(`${area} - files left by one job are gone for the next`, async () => {
      await post(url, {
        code: 'open("/tmp/left", "w").write("x"); open("left", "w").write("x")',
        language: 'python',
      })
      await post(url, {
        code: 'open("/tmp/left", "w").write("x"); open("left", "w").write("x")',
        language: 'python',
      })
      const r = await post(url, { code: 'ls -A /tmp /work', language: 'bash' })
      assert.equal(r.body.run_result?.stdout, '/tmp:\n\n/work:\nmain.sh\n')
    })

    it(`${area} - a container killed under a running job gives SandboxError; the pool heals`, async () => {
      const pending = post(url, { code: 'import time\ntime.sleep(20)', language: 'python', run_timeout: 30 })
      while (backend.stats().running < 1) await new Promise((r) => setImmediate(r))
      const mine = await docker.listContainers({
        filters: { label: ['triad.sandbox.owner'], ancestor: [IMAGE] },
      })
      await Promise.all(
        mine.map((c) =>
          docker
            .getContainer(c.Id)
            .kill()
            .catch(() => {}),
        ),
      )
      const r = await pending
      assert.equal(r.code, 200)
      assert.equal(r.body.status, 'SandboxError', JSON.stringify(r.body))
      assert.equal(r.body.run_result?.status, 'Error')
      const next = await post(url, { code: 'print("healed")', language: 'python' })
      assert.equal(next.body.status, 'Success', JSON.stringify(next.body))
      assert.equal(next.body.run_result?.stdout, 'healed\n')
    })

    it(`${area} - python runs under the fork server in attach mode, spawned in exec mode`, async () => {
      const code =
        'import os\na = open("/proc/%d/cmdline" % os.getppid(), "rb").read().split(b"\\0")\nprint(a[1:a.index(b"-c")], a[a.index(b"-c") + 1][:24])'
      const r = await post(url, { code, language: 'python' })
      const expected =
        mode === DockerMode.Attach
          ? "[b'-s', b'-E'] b'# The python fork server'\n"
          : "[b'-I', b'-S'] b'# The in-sandbox job run'\n"
      assert.equal(r.body.run_result?.stdout, expected, JSON.stringify(r.body))
    })

    if (mode === DockerMode.Attach)
      it(`${area} - a job can neither list nor connect to its runner's socket`, async () => {
        const code = [
          'import os, socket',
          'def tried(f):',
          '    try:',
          '        f()',
          '        return "reached"',
          '    except OSError as e:',
          '        return type(e).__name__',
          'print(tried(lambda: os.listdir("/run/triad")))',
          'print(tried(lambda: socket.socket(socket.AF_UNIX).connect("/run/triad/runner.sock")))',
        ].join('\n')
        const r = await post(url, { code, language: 'python' })
        assert.equal(r.body.status, 'Success', JSON.stringify(r.body))
        assert.equal(r.body.run_result?.stdout, 'PermissionError\nPermissionError\n')
      })

    hostileCases(area, target)
    if (mode === DockerMode.Attach) forkServerCases(area, target)
    badRequestCases(area, target)
    perUserLimitCases(area, target)

    it(`${area} - breaches recycled their containers`, () => {
      assert.ok(backend.stats().recycled >= 5, JSON.stringify(backend.stats()))
    })
  })
}
